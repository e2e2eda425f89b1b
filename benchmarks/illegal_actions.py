"""Illegal actions never pay: an always-illegal policy against the uniformly random legal one.

Whole episodes (seeds 0..N-1) of every Gymnasium task and of every shipped scenario through the AEC
env: team return (tasks: the learner's return) of a policy that always picks a masked-out action and
of a uniformly random legal policy, mean and 95 % CI, and the illegal share the KPIs report.

    python benchmarks/illegal_actions.py --episodes 5            # prints the table
    python benchmarks/illegal_actions.py --episodes 20 --write   # also writes results/illegal_actions.md
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
from csr_marl.whatif.store import atomic_write

RESULTS = Path(__file__).parent / "results"


def pick(rng: np.random.Generator, mask: np.ndarray, illegal: bool) -> int:
    return int(rng.choice(np.flatnonzero(mask == 0) if illegal else np.flatnonzero(mask)))


def scenario_episode(name: str, seed: int, illegal: bool) -> tuple[float, float]:
    env = csr_marl.raw_env(name)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed + 10_000)
    for _ in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else pick(rng, info["action_mask"], illegal))
    result = env.unwrapped.center.result()
    return result.team_return, result.kpis["illegal_action_share"]


def task_episode(task: str, seed: int, illegal: bool) -> tuple[float, float]:
    env = gymnasium.make(f"csr_marl/{task}")
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed + 10_000)
    total, done, decisions, bad = 0.0, False, 0, 0
    while not done:
        _, reward, terminated, truncated, info = env.step(pick(rng, info["action_mask"], illegal))
        total, done, decisions = total + reward, terminated or truncated, decisions + 1
    bad = info["illegal_actions"]
    return total, bad / decisions


def row(label: str, play, name: str, episodes: int) -> str:
    cells = []
    for illegal in (True, False):
        runs = [play(name, seed, illegal) for seed in range(episodes)]
        mean, low, high = mean_ci([r[0] for r in runs])
        share = float(np.mean([r[1] for r in runs]))
        cells.append((mean, low, high, share))
    (bad, _, bad_high, bad_share), (good, good_low, _, _) = cells
    verdict = "yes" if bad_high < good_low else ("mean only" if bad < good else "**no**")
    return (
        f"| {label} | {bad:.2f} [{cells[0][1]:.2f}, {bad_high:.2f}] | {bad_share:.0%} | "
        f"{good:.2f} [{good_low:.2f}, {cells[1][2]:.2f}] | {verdict} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write results/illegal_actions.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore", IllegalActionWarning)
    started = time.perf_counter()
    lines = [
        "| env | always illegal: return [95 % CI] | illegal share (KPI) | random legal: return [95 % CI] | CIs apart |",
        "|---|---|---|---|---|",
    ]
    lines += [row(f"`csr_marl/{task}`", task_episode, task, args.episodes) for task in TASKS]
    lines += [row(f"`{name}` (AEC, team)", scenario_episode, name, args.episodes) for name in scenario_names()]
    text = "\n".join(lines)
    footer = f"Seeds 0..{args.episodes - 1}, whole episodes; wall time {time.perf_counter() - started:.0f} s."
    print(text + "\n\n" + footer)
    if args.write:
        atomic_write(
            RESULTS / "illegal_actions.md",
            "# Illegal actions never pay\n\nProduced by `python benchmarks/illegal_actions.py --episodes "
            f"{args.episodes} --write`. An illegal action costs `rewards.illegal_action` (-0.1) and is "
            "replaced by a uniformly random legal action.\n\n" + text + "\n\n" + footer + "\n",
        )


if __name__ == "__main__":
    main()
