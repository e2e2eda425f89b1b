"""How much of each agent's return reaches its Tianshou learner, plain ``PettingZooEnv`` vs csr_marl's.

One episode of Tianshou's masked random agents per reward mode; for each agent, the rewards Tianshou's
multi-agent dispatcher credits it (its column, on its own transitions) over its return in the plain
AEC environment replaying the same actions (every ``last()`` reward). Prints one row per wrapper and
mode: the share summed over agents and the lowest agent's share.

    python benchmarks/tianshou_credit.py [--scenario standard_day] [--seed 0]
"""

from __future__ import annotations

import argparse
import logging
from collections import defaultdict

import numpy as np
from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv

import csr_marl
from csr_marl.train import TianshouEnv


def one_episode(env, seed: int):
    np.random.seed(seed)
    team = MultiAgentOffPolicyAlgorithm(
        algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents],
        env=env,
    )
    collector = Collector(team, DummyVectorEnv([lambda: env]), VectorReplayBuffer(500_000, 1))
    collector.reset(reset_buffer=True, gym_reset_kwargs={"seed": seed})
    collector.collect(n_episode=1)
    buffer = collector.buffer
    return buffer[np.arange(len(buffer))]


def returns(scenario: str, options: dict, seed: int, actions) -> dict[str, float]:
    env = csr_marl.env(scenario, **options)
    env.reset(seed=seed)
    out: dict[str, float] = defaultdict(float)
    turns = iter(actions)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        out[agent] += reward
        action = next(turns, None)
        env.step(None if terminated or truncated else int(action))
    return out


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
            batch = one_episode(env, args.seed)
            seed = env.finished[0].seed if isinstance(env, TianshouEnv) else args.seed
            truth = returns(args.scenario, options, seed, batch.act)
            credited = {a: float(batch.rew[batch.obs.agent_id == a, i].sum()) for i, a in enumerate(env.agents)}
            total = sum(credited.values()) / sum(truth.values())
            lowest = min(credited[a] / truth[a] for a in env.agents if truth[a])
            print(f"{name:<34} {mode:<11} {total:>17.1%} {lowest:>12.1%}")


if __name__ == "__main__":
    main()
