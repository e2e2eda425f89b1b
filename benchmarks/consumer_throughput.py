"""Environment steps per second through each RL library's wrapper, beside the bare environments.

Every path plays `standard_day` with uniformly random legal actions (masks read where that library
puts them; the SuperSuit + SB3 path samples unmasked, as SB3's PPO does, and its illegal picks take
the fallback) for the same number of its own steps; paths are measured in turn, several rounds, and
each keeps its best round (other processes only ever slow a round down). Then the slowest path is
profiled with cProfile, and the share of its time spent in csr_marl's own code (functions defined in
the package, self time) is printed.

    python benchmarks/consumer_throughput.py               # 3 rounds of 3,000 steps per path
    python benchmarks/consumer_throughput.py --write       # also results/consumer_throughput.{md,json}

A step is one call of the path's own step: an AEC turn, a parallel epoch (all agents), a vector-env
step (all agents of all copies), a TorchRL rollout step. "samples/s" counts agent samples: what a
learner receives (one per AEC turn; one per live agent per parallel step). The TorchRL route
(``csr_marl.envs.torchrl.TorchRLEnv``) takes one decision per step, as ``raw_env`` does: its ratio to
``raw_env``'s steps/s, both measured in the same run, is printed, and the path asserts that none of its
actions was illegal.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from core_throughput import core_build, cpu_model  # the same machine line as the core benchmark

import csr_marl
import csr_marl.envs
from csr_marl.envs.driver import IllegalActionWarning
from csr_marl.whatif.store import atomic_write, write_json

RESULTS = Path(__file__).parent / "results"
Path_ = Callable[[int], tuple[float, int]]  # steps -> (seconds, agent samples)


def legal(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def bare_aec(make: Callable[[], object]) -> Path_:
    def run(steps: int) -> tuple[float, int]:
        env: object = make()
        rng = np.random.default_rng(0)
        env.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            if not env.agents:
                env.reset()
            _, _, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else legal(rng, info["action_mask"]))
        return time.perf_counter() - start, steps
    return run


def bare_parallel(steps: int) -> tuple[float, int]:
    env = csr_marl.parallel_env()
    rng = np.random.default_rng(0)
    _, infos = env.reset(seed=0)
    samples, start = 0, time.perf_counter()
    for _ in range(steps):
        if not env.agents:
            _, infos = env.reset()
        samples += len(infos)
        _, _, _, _, infos = env.step({a: legal(rng, info["action_mask"]) for a, info in infos.items()})
    return time.perf_counter() - start, samples


def tianshou(steps: int) -> tuple[float, int]:
    from csr_marl.train import TianshouEnv

    env = TianshouEnv()
    rng = np.random.default_rng(0)
    observation, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        observation, _, terminated, truncated, _ = env.step(legal(rng, np.asarray(observation["mask"])))
        if terminated or truncated:
            observation, _ = env.reset()
    return time.perf_counter() - start, steps


def torchrl(kind: str) -> Path_:
    def run(steps: int) -> tuple[float, int]:
        import torch
        from torchrl.envs.libs.pettingzoo import PettingZooWrapper

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = PettingZooWrapper(
                csr_marl.env() if kind == "aec" else csr_marl.parallel_env(), use_mask=True, categorical_actions=True
            )
        generator = torch.Generator().manual_seed(0)

        def policy(td):
            for group in env.group_map:
                weights = td[group, "action_mask"].float()
                weights[weights.sum(-1) == 0] = 1.0
                flat = weights.reshape(-1, weights.shape[-1])
                td.set((group, "action"), torch.multinomial(flat, 1, generator=generator).reshape(weights.shape[:-1]))
            return td

        start = time.perf_counter()
        env.rollout(steps, policy, break_when_any_done=False)
        agents = len(env._env.possible_agents)
        return time.perf_counter() - start, steps if kind == "aec" else steps * agents
    return run


def torchrl_route(steps: int) -> tuple[float, int]:
    from csr_marl.envs.torchrl import MaskedRandomPolicy, TorchRLEnv

    env = TorchRLEnv(seed=0)
    policy = MaskedRandomPolicy(seed=0)
    start = time.perf_counter()
    env.rollout(steps, policy, break_when_any_done=False)  # one decision per step
    elapsed = time.perf_counter() - start
    illegal = sum(result.kpis["illegal_actions"] for result in env.finished) + env.center.kpis.extra["illegal_actions"]
    assert illegal == 0, f"{illegal} illegal actions through TorchRLEnv"
    return elapsed, steps


def supersuit_sb3(steps: int) -> tuple[float, int]:
    import supersuit

    vec = supersuit.concat_vec_envs_v1(
        supersuit.pettingzoo_env_to_vec_env_v1(csr_marl.parallel_env()), 1, num_cpus=0, base_class="stable_baselines3"
    )
    rng = np.random.default_rng(0)
    n = vec.action_space.n
    with warnings.catch_warnings():
        # Unmasked on purpose, as SB3's PPO samples: the warning at each episode's end says so again.
        warnings.simplefilter("ignore", IllegalActionWarning)
        vec.reset()
        start = time.perf_counter()
        for _ in range(steps):  # illegal picks take the fallback
            vec.step(rng.integers(n, size=vec.num_envs))
        elapsed = time.perf_counter() - start
        vec.close()
    return elapsed, steps * vec.num_envs


def rllib(kind: str) -> Path_:
    def run(steps: int) -> tuple[float, int]:
        from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

        env = PettingZooEnv(csr_marl.env()) if kind == "aec" else ParallelPettingZooEnv(csr_marl.parallel_env())
        rng = np.random.default_rng(0)
        observations, infos = env.reset(seed=0)
        samples, start = 0, time.perf_counter()
        for _ in range(steps):
            # RLlib's AEC wrapper returns no infos from reset(): its first action is drawn unmasked.
            actions = {
                a: legal(rng, infos[a]["action_mask"]) if a in infos else int(rng.integers(env.action_space[a].n))
                for a in observations
            }
            samples += len(actions)
            observations, _, terminated, truncated, infos = env.step(actions)
            if terminated.get("__all__") or truncated.get("__all__"):
                observations, infos = env.reset()
        return time.perf_counter() - start, samples
    return run


def rllib_deciding(steps: int) -> tuple[float, int]:
    from csr_marl.envs.rllib import RLlibEnv

    env = RLlibEnv()
    rng = np.random.default_rng(0)
    _, infos = env.reset(seed=0)
    samples, start = 0, time.perf_counter()
    for _ in range(steps):
        actions = {a: legal(rng, info["action_mask"]) for a, info in infos.items()}
        samples += len(actions)
        _, _, terminated, truncated, infos = env.step(actions)
        if terminated["__all__"] or truncated["__all__"]:
            _, infos = env.reset()
    return time.perf_counter() - start, samples


def gymnasium_task(steps: int) -> tuple[float, int]:
    import gymnasium as gym

    env = gym.make("csr_marl/Resolver-v4")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(legal(rng, env.unwrapped.action_masks()))
        if terminated or truncated:
            env.reset()
    return time.perf_counter() - start, steps


TORCHRL_ROUTE = "TorchRL: csr_marl.envs.torchrl.TorchRLEnv (one decision per step)"
PATHS: dict[str, Path_] = {
    "raw_env (AEC, bare)": bare_aec(csr_marl.raw_env),
    "env() (AEC, PettingZoo's wrappers)": bare_aec(csr_marl.env),
    "parallel_env (bare)": bare_parallel,
    "Tianshou: csr_marl.train.TianshouEnv": tianshou,
    "TorchRL: PettingZooWrapper(env())": torchrl("aec"),
    "TorchRL: PettingZooWrapper(parallel_env())": torchrl("parallel"),
    TORCHRL_ROUTE: torchrl_route,
    "SuperSuit vec env + SB3 VecEnv": supersuit_sb3,
    "RLlib: PettingZooEnv(env())": rllib("aec"),
    "RLlib: ParallelPettingZooEnv(parallel_env())": rllib("parallel"),
    "RLlib: csr_marl.envs.rllib.RLlibEnv (deciding agents only)": rllib_deciding,
    "Gymnasium: csr_marl/Resolver-v4": gymnasium_task,
}


def csr_marl_share(run: Path_, steps: int) -> float:
    """Share of the path's time spent in functions defined in the csr_marl package (self time)."""
    profile = cProfile.Profile()
    profile.enable()
    run(steps)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in stats.values())
    ours = sum(row[2] for (path, _, _), row in stats.items() if "csr_marl" in Path(path).parts)
    return ours / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000, help="steps per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write results/consumer_throughput.{md,json}")
    args = parser.parse_args()
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, run in PATHS.items():
            seconds, samples = run(args.steps)
            rates = (args.steps / seconds, samples / seconds)
            best[name] = max(best.get(name, rates), rates)
    reference = best["raw_env (AEC, bare)"][0]
    slowest = min(best, key=lambda name: best[name][1])
    share = csr_marl_share(PATHS[slowest], args.steps)
    lines = [
        f"csr_marl {csr_marl.__version__} ({core_build()}) · Python {platform.python_version()} · {platform.machine()} · "
        f"{cpu_model()} · load average {os.getloadavg()[0]:.2f} · "
        f"best of {args.rounds} interleaved rounds of {args.steps:,} steps · `standard_day`, random legal actions",
        "",
        "| path | steps/s | agent samples/s | samples/s vs raw_env |",
        "|---|---|---|---|",
    ]
    for name, (steps, samples) in best.items():
        lines.append(f"| {name} | {steps:,.0f} | {samples:,.0f} | {samples / reference:.2f}x |")
    route = best[TORCHRL_ROUTE][0] / reference  # one decision per step, as raw_env's
    lines += [
        "",
        f"{TORCHRL_ROUTE}: {best[TORCHRL_ROUTE][0]:,.0f} decisions/s, {route:.0%} of raw_env's "
        f"{reference:,.0f} measured in this run (target: at least 10 %), 0 illegal actions.",
        f"Slowest path by samples/s: {slowest}; csr_marl's own code is {share:.0%} of its time (cProfile, self time).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        atomic_write(RESULTS / "consumer_throughput.md", "# Throughput through each RL library\n\n" + text + "\n")
        data = {
            "steps": args.steps, "rounds": args.rounds, "paths": best, "slowest": slowest, "csr_marl_share": share,
            "torchrl_route_vs_raw_env": route,
        }
        write_json(RESULTS / "consumer_throughput.json", data)


if __name__ == "__main__":
    main()
