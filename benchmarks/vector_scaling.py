"""Rollouts in worker processes: env steps/s with one worker and with two, through the usual vectorisers.

RL collection runs N copies of the environment side by side. Three documented ways, each timed with
two copies in one process (the one-worker reference) and two copies in two worker processes:

* Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` over a single-agent task (``csr_marl/Resolver-v1``);
* SuperSuit's ``concat_vec_envs_v1(..., num_cpus=0 | 2)`` over the parallel env (what SB3 users run);
* Tianshou's ``DummyVectorEnv`` / ``SubprocVectorEnv`` over ``csr_marl.train.TianshouEnv``.

Random legal actions (SuperSuit's path samples unmasked, as SB3's PPO does). Settings are measured in
turn over several rounds, each keeping its best (other processes only slow a round down); the ratio is
two workers over one. Target (issue 12): >= 1.7x on a 2-core machine. The machine's own ceiling is
measured in the same rounds: the same pure-Python loop run twice in one process, then once in each of
two processes (on a host whose other tenants take a core, this ceiling is near 1x and no vectoriser
can do better).

    python benchmarks/vector_scaling.py [--steps 2000] [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from csr_marl.whatif.store import atomic_write, write_json

RESULTS = Path(__file__).parent / "results"
TARGET = 1.7


def gymnasium_vector(workers: int, steps: int) -> float:
    import gymnasium as gym

    import csr_marl.envs

    gym.register_envs(csr_marl.envs)
    make = [lambda: gym.make("csr_marl/Resolver-v1") for _ in range(2)]
    vec = gym.vector.AsyncVectorEnv(make) if workers == 2 else gym.vector.SyncVectorEnv(make)
    rng = np.random.default_rng(0)
    _, infos = vec.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        # A copy whose episode just ended has no decision (all-zero mask); its next action is ignored.
        actions = np.array([rng.choice(np.flatnonzero(mask)) if mask.any() else 0 for mask in infos["action_mask"]])
        _, _, _, _, infos = vec.step(actions)
    elapsed = time.perf_counter() - start
    vec.close()
    return 2 * steps / elapsed


def supersuit_vector(workers: int, steps: int) -> float:
    import supersuit

    import csr_marl

    vec = supersuit.pettingzoo_env_to_vec_env_v1(csr_marl.parallel_env())
    vec = supersuit.concat_vec_envs_v1(vec, 2, num_cpus=0 if workers == 1 else workers, base_class="stable_baselines3")
    rng = np.random.default_rng(0)
    vec.reset()
    start = time.perf_counter()
    for _ in range(steps):
        vec.step(rng.integers(vec.action_space.n, size=vec.num_envs))
    elapsed = time.perf_counter() - start
    vec.close()
    return 2 * steps / elapsed  # parallel steps (each of every agent of one copy)


def tianshou_vector(workers: int, steps: int) -> float:
    from tianshou.env import DummyVectorEnv, SubprocVectorEnv

    from csr_marl.train import TianshouEnv

    kind = SubprocVectorEnv if workers == 2 else DummyVectorEnv
    vec = kind([lambda: TianshouEnv() for _ in range(2)])
    rng = np.random.default_rng(0)
    vec.seed([0, 1])
    observations, _ = vec.reset()
    start = time.perf_counter()
    for _ in range(steps):
        actions = np.array([rng.choice(np.flatnonzero(np.asarray(obs["mask"]))) for obs in observations])
        observations, _, terminated, truncated, _ = vec.step(actions)
        done = np.flatnonzero(np.logical_or(terminated, truncated))
        if len(done):
            fresh, _ = vec.reset(done)
            for i, obs in zip(done, fresh):
                observations[i] = obs
    elapsed = time.perf_counter() - start
    vec.close()
    return 2 * steps / elapsed


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def machine_ceiling(workers: int, steps: int) -> float:
    """Loops per second: two loops in one process (1) or one in each of two processes (2)."""
    n = 2_000 * steps
    start = time.perf_counter()
    if workers == 1:
        _spin(n), _spin(n)
    else:
        with multiprocessing.Pool(2) as pool:
            pool.map(_spin, [n, n])
    return 2 / (time.perf_counter() - start)


PATHS: dict[str, Callable[[int, int], float]] = {
    "machine ceiling: a pure-Python loop": machine_ceiling,
    "Gymnasium Sync/AsyncVectorEnv, csr_marl/Resolver-v1": gymnasium_vector,
    "SuperSuit concat_vec_envs_v1, parallel_env": supersuit_vector,
    "Tianshou Dummy/SubprocVectorEnv, TianshouEnv": tianshou_vector,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="vector steps per setting and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write results/vector_scaling.{md,json}")
    args = parser.parse_args()
    best: dict[tuple[str, int], float] = {}
    for _ in range(args.rounds):
        for name, run in PATHS.items():
            for workers in (1, 2):
                rate = run(workers, args.steps)
                best[name, workers] = max(best.get((name, workers), 0.0), rate)
    lines = [
        f"Python {platform.python_version()} · {platform.machine()} · {os.cpu_count()} CPUs · best of {args.rounds} "
        f"interleaved rounds of {args.steps:,} vector steps · two environment copies",
        "",
        "| vectoriser | 1 worker (env steps/s) | 2 workers (env steps/s) | speed-up |",
        "|---|---|---|---|",
    ]
    rows = {}
    for name in PATHS:
        one, two = best[name, 1], best[name, 2]
        rows[name] = {"one": one, "two": two, "speedup": two / one}
        lines.append(f"| {name} | {one:,.0f} | {two:,.0f} | {two / one:.2f}x |")
    lines.append("")
    lines.append(f"Target: >= {TARGET}x with two workers.")
    text = "\n".join(lines)
    print(text)
    if args.write:
        atomic_write(RESULTS / "vector_scaling.md", "# Rollouts in worker processes\n\n" + text + "\n")
        write_json(RESULTS / "vector_scaling.json", {"steps": args.steps, "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
