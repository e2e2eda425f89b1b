"""Machine instructions per AEC step, counted by Valgrind's callgrind: a measure the load of a shared
machine cannot move (wall-clock figures here drift by tens of percent from minute to minute).

The same episodes of `standard_day` with the same actions (a random masked team, recorded first) are
replayed three ways, and only the replay is counted (callgrind's counters are zeroed before it and
dumped after it):

* core: `ContactCenter.next_decision` / `decide` alone (the floor under any environment);
* raw: `csr_marl.raw_env`, `last()` and `step()` every turn, the mask read from `info`;
* wrapped: the same through `csr_marl.env()`.

    python benchmarks/env_instructions.py             # needs valgrind; about two minutes

Instructions are not time (cache misses and branch mispredictions do not show), but they are exact
and repeatable: use them to compare two versions of the environment, and the wall-clock ratios of
`env_throughput.py` for the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import csr_marl
from csr_marl.sim.center import ContactCenter

SCENARIO, SEEDS = "standard_day", (0, 1)
CONTENDERS = ("core", "raw", "wrapped")


def record() -> list[list[int]]:
    """The actions of a random masked team, one list per seed (every one legal)."""
    from env_throughput import RandomMasked

    env = csr_marl.raw_env(SCENARIO)
    runs = []
    for seed in SEEDS:
        policy, actions = RandomMasked(seed), []
        env.reset(seed=seed)
        for _ in env.agent_iter():
            _, _, terminated, truncated, info = env.last()
            action = None if terminated or truncated else policy(info["action_mask"])
            if action is not None:
                actions.append(action)
            env.step(action)
        runs.append(actions)
    return runs


def replay(contender: str, runs: list[list[int]]) -> None:
    """Replay ``runs``, counting only the replay (run under callgrind by :func:`main`)."""

    def callgrind(flag: str) -> None:
        subprocess.run(["callgrind_control", flag, str(os.getpid())], check=True, capture_output=True)

    scenario = csr_marl.load_scenario(SCENARIO)
    make = csr_marl.raw_env if contender == "raw" else csr_marl.env
    envs = [make(SCENARIO) for _ in runs] if contender != "core" else []
    centers = [ContactCenter(scenario, seed, track_rewards=True) for seed in SEEDS] if contender == "core" else []
    callgrind("-z")
    for k, actions in enumerate(runs):
        if contender == "core":
            center = centers[k]
            for action in actions:
                center.decide(action, center.next_decision())
                center.rewards.drain()
            continue
        env, turns = envs[k], iter(actions)
        env.reset(seed=SEEDS[k])
        for _ in env.agent_iter():
            _, _, terminated, truncated, info = env.last()
            info["action_mask"]
            env.step(None if terminated or truncated else next(turns))
    callgrind("-d")


def count(contender: str, runs_file: Path, out_dir: Path) -> int:
    """Instructions callgrind counted between the zero and the dump of one replay."""
    out = out_dir / f"{contender}.%p"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-W", "ignore",
         __file__, "--child", contender, str(runs_file)],
        check=True, capture_output=True,
    )
    dump = next(out_dir.glob(f"{contender}.*.1"))  # the dump (the other file: program termination)
    summary = next(line for line in dump.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("CONTENDER", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        contender, runs_file = args.child
        replay(contender, json.loads(Path(runs_file).read_text()))
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    runs = record()
    steps = sum(map(len, runs))
    with tempfile.TemporaryDirectory() as tmp:
        runs_file = Path(tmp) / "runs.json"
        runs_file.write_text(json.dumps(runs))
        per_step = {c: count(c, runs_file, Path(tmp)) / steps for c in CONTENDERS}
    print(f"{SCENARIO}, seeds {SEEDS}: {steps:,} decisions replayed; instructions per AEC step (callgrind)")
    core = per_step["core"]
    for contender in CONTENDERS:
        extra = "" if contender == "core" else f"   env overhead {per_step[contender] - core:>9,.0f} ({per_step[contender] / core:.2f}x core)"
        print(f"{contender:<8} {per_step[contender]:>9,.0f}{extra}")


if __name__ == "__main__":
    main()
