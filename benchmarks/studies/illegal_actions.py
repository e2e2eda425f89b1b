"""Illegal actions never pay: an always-illegal policy against the uniformly random legal one.

Whole episodes (seeds 0..N-1) of every Gymnasium task and of every shipped scenario through the AEC
env: team return (tasks: the learner's return) of a policy that always picks a masked-out action and
of a uniformly random legal policy, mean and 95 % CI, and the illegal share the KPIs report. The
paired column plays each seed a third time with the legal actions the replacement would draw (the
seed's ``illegal_fallback`` stream): the same game, so the always-illegal policy's deficit per episode
is exactly its penalties.

    python benchmarks/studies/illegal_actions.py --episodes 5            # prints the table
    python benchmarks/studies/illegal_actions.py --episodes 20 --write   # also writes results/illegal_actions.md
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import gymnasium
import numpy as np

import csr_marl
import csr_marl.envs
from csr_marl.analysis.stats import mean_ci
from csr_marl.config import scenario_names
from csr_marl.envs import TASKS
from csr_marl.envs.driver import IllegalActionWarning
from csr_marl.sim.random import RandomStreams
from csr_marl.whatif.store import atomic_write

RESULTS = Path(__file__).resolve().parents[1] / "results"


POLICIES = ("illegal", "legal", "mirrored")


def chooser(policy: str, seed: int):
    """A random forbidden action, a random legal one, or the legal one the replacement would draw."""
    if policy == "mirrored":
        stream = RandomStreams(seed)["illegal_fallback"]
        return lambda mask: int(np.flatnonzero(mask)[stream.integers(int(mask.sum()))])
    rng = np.random.default_rng(seed + 10_000)
    illegal = policy == "illegal"
    return lambda mask: int(rng.choice(np.flatnonzero(mask == 0) if illegal else np.flatnonzero(mask)))


def scenario_episode(name: str, seed: int, policy: str) -> tuple[float, float]:
    env = csr_marl.raw_env(name)
    env.reset(seed=seed)
    pick = chooser(policy, seed)
    for _ in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else pick(info["action_mask"]))
    result = env.unwrapped.center.result()
    return result.team_return, result.kpis["illegal_action_share"]


def task_episode(task: str, seed: int, policy: str) -> tuple[float, float]:
    env = gymnasium.make(f"csr_marl/{task}")
    _, info = env.reset(seed=seed)
    pick = chooser(policy, seed)
    total, done, decisions = 0.0, False, 0
    while not done:
        _, reward, terminated, truncated, info = env.step(pick(info["action_mask"]))
        total, done, decisions = total + reward, terminated or truncated, decisions + 1
    bad = info["illegal_actions"]
    return total, bad / decisions


def row(label: str, play, name: str, episodes: int) -> str:
    runs = {policy: [play(name, seed, policy) for seed in range(episodes)] for policy in POLICIES}
    bad, low, high = mean_ci([r[0] for r in runs["illegal"]])
    good, good_low, good_high = mean_ci([r[0] for r in runs["legal"]])
    share = float(np.mean([r[1] for r in runs["illegal"]]))
    gap = mean_ci([b[0] - m[0] for b, m in zip(runs["illegal"], runs["mirrored"])])
    verdict = "yes" if high < good_low else ("mean below, CIs overlap" if bad < good else "**no**")
    return (
        f"| {label} | {bad:.2f} [{low:.2f}, {high:.2f}] | {share:.0%} | {good:.2f} [{good_low:.2f}, {good_high:.2f}] | "
        f"{verdict} | {gap[0]:.2f} [{gap[1]:.2f}, {gap[2]:.2f}] |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write results/illegal_actions.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore", IllegalActionWarning)
    started = time.perf_counter()
    lines = [
        "| env | always illegal: return [95 % CI] | illegal share of its decisions | random legal: return [95 % CI] | CIs apart | "
        "paired: illegal minus the same game played legally [95 % CI] |",
        "|---|---|---|---|---|---|",
    ]
    lines += [row(f"`csr_marl/{task}`", task_episode, task, args.episodes) for task in TASKS]
    lines += [row(f"`{name}` (AEC, team)", scenario_episode, name, args.episodes) for name in scenario_names()]
    text = "\n".join(lines)
    footer = f"Seeds 0..{args.episodes - 1}, whole episodes; wall time {time.perf_counter() - started:.0f} s."
    print(text + "\n\n" + footer)
    if args.write:
        atomic_write(
            RESULTS / "illegal_actions.md",
            "# Illegal actions never pay\n\nProduced by `python benchmarks/studies/illegal_actions.py --episodes "
            f"{args.episodes} --write`. An illegal action costs `rewards.illegal_action` (-0.1) and is "
            "replaced by a uniformly random legal action.\n\n" + text + "\n\n" + footer + "\n",
        )


if __name__ == "__main__":
    main()
