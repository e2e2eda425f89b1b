"""How much of each agent's return reaches its Tianshou learner, plain ``PettingZooEnv`` vs csr_marl's.

One episode of Tianshou's masked random agents per reward mode; for each agent, the rewards Tianshou's
multi-agent dispatcher credits it (its column, on its own transitions) over its return in the plain
AEC environment replaying the same actions (every ``last()`` reward). Prints one row per wrapper and
mode: the share summed over agents and the lowest agent's share.

    python benchmarks/studies/tianshou_credit.py [--scenario standard_day] [--seed 0]
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from tianshou.env import PettingZooEnv

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from credit_helpers import credited_to_learners, random_episode, replayed_returns  # noqa: E402

import csr_marl  # noqa: E402
from csr_marl.train import TianshouEnv  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="standard_day")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)  # per-agent return vectors
    print(f"{'wrapper':<34} {'mode':<11} {'share (all agents)':>18} {'lowest agent':>13}")
    for mode in ("shared", "individual"):
        options = {"overrides": {"rewards.mode": mode}}
        wrappers = {
            "tianshou.env.PettingZooEnv": PettingZooEnv(csr_marl.env(args.scenario, flat_observations=False, **options)),
            "csr_marl.train.TianshouEnv": TianshouEnv(args.scenario, **options),
        }
        for name, env in wrappers.items():
            batch = random_episode(env, args.seed)
            seed = env.finished[0].seed if isinstance(env, TianshouEnv) else args.seed
            truth = replayed_returns(args.scenario, options, seed, batch.act)
            credited = credited_to_learners(batch, env.agents)
            total = sum(credited.values()) / sum(truth.values())
            lowest = min(credited[a] / truth[a] for a in env.agents if truth[a])
            print(f"{name:<34} {mode:<11} {total:>17.1%} {lowest:>12.1%}")


if __name__ == "__main__":
    main()
