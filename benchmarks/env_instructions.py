"""Machine instructions per AEC step, counted by Valgrind's callgrind: a measure the load of a shared
machine cannot move (wall-clock figures here drift by tens of percent from minute to minute).

The same episodes of `standard_day` with the same actions (a random masked team, recorded first) are
replayed three ways, and only the replay is counted (callgrind's counters are zeroed before it and
dumped after it):

* core: `ContactCenter.next_decision` / `decide` alone (the floor under any environment);
* raw: `csr_marl.raw_env`, `last()` and `step()` every turn, the mask read from `info`;
* wrapped: the same through `csr_marl.env()`.

    python benchmarks/env_instructions.py             # needs valgrind; about two minutes
    python benchmarks/env_instructions.py --parts     # + where raw_env's own instructions go (four more)

`--parts` replays `raw_env` four more ways, each adding one read to the step alone, and so splits the
environment's own instructions into what every step costs it:

* step: `step()` alone (the agent's flags read from `terminations` / `truncations`, no `last()`);
* info: plus `infos[agent]` (the mask, the reward components, the info dict);
* observation: plus `observe(agent)`;
* text features: the observation's share that is the ticket text's hashing, measured as `raw` with
  the encoder's hasher answering a constant (the what-if of text that costs nothing);
* `last()`'s own: `raw` less all of the above (the cumulative reward, PettingZoo's `last()` itself).

Each process first plays one episode of another seed per replayed seed, uncounted (the core: through
a throwaway env), so the count is of the steady state: the bank's tables, the content caches and the
env's text pieces warm, as in the later episodes of any run. (Before 2026-11-27 the count began cold,
which added about 16,000 instructions a step to the env's share and more to the text features'.)

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
from typing import Any

import csr_marl
from csr_marl.sim.center import ContactCenter

SCENARIO, SEEDS = "standard_day", (0, 1)
CONTENDERS = ("core", "raw", "wrapped")
PARTS = ("step", "info", "observation", "no_text")  # --parts: raw_env's reads, one added at a time


class NoText:
    """A text hasher whose features cost nothing: zeros (the ``no_text`` what-if of ``--parts``)."""

    def __init__(self, n: int) -> None:
        self.n, self._zeros = n, bytes(4 * n)

    def __call__(self, text: str) -> list[float]:
        return [0.0] * self.n

    def packed(self, text: str) -> bytes:
        return self._zeros


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


def warm(env: Any, seed: int) -> None:
    """One episode of a random masked team, every observation and info read (outside the count)."""
    from env_throughput import RandomMasked

    policy = RandomMasked(seed)
    env.reset(seed=seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()  # the observation is built, as in any run
        env.step(None if terminated or truncated else policy(info["action_mask"]))


def replay(contender: str, runs: list[list[int]]) -> None:
    """Replay ``runs``, counting only the replay (run under callgrind by :func:`main`)."""

    def callgrind(flag: str) -> None:
        subprocess.run(["callgrind_control", flag, str(os.getpid())], check=True, capture_output=True)

    scenario = csr_marl.load_scenario(SCENARIO)
    make = csr_marl.env if contender == "wrapped" else csr_marl.raw_env
    envs = [make(SCENARIO) for _ in runs] if contender != "core" else []
    if contender == "no_text":  # the what-if: every ticket's text features cost nothing (pure build only)
        for env in envs:
            encoder = env.unwrapped._driver.encoder
            encoder.hasher = NoText(encoder.hasher.n)
    centers = [ContactCenter(scenario, seed, track_rewards=True) for seed in SEEDS] if contender == "core" else []
    # Steady state, outside the count: each env (for the core, a throwaway one) first plays an episode of
    # another seed, as any env has played many before a training run's later steps: the bank's tables,
    # the caches of content (reply grades, knowledge-base matches) and the env's text pieces are warm.
    for k in range(len(SEEDS)):
        warm(envs[k] if envs else csr_marl.raw_env(SCENARIO), max(SEEDS) + 1 + k)
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
        if contender in ("raw", "wrapped", "no_text"):
            for _ in env.agent_iter():
                _, _, terminated, truncated, info = env.last()
                info["action_mask"]
                env.step(None if terminated or truncated else next(turns))
            continue
        for agent in env.agent_iter():  # the parts: the step, plus one read at a time
            if contender != "step":
                env.infos[agent]["action_mask"]
            if contender == "observation":
                env.observe(agent)
            env.step(None if env.terminations[agent] or env.truncations[agent] else next(turns))
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
    parser.add_argument("--parts", action="store_true", help="also split raw_env's own instructions by what a step reads")
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
        contenders = CONTENDERS + (PARTS if args.parts else ())
        per_step = {c: count(c, runs_file, Path(tmp)) / steps for c in contenders}
    print(f"{SCENARIO}, seeds {SEEDS}: {steps:,} decisions replayed; instructions per AEC step (callgrind)")
    core = per_step["core"]
    for contender in CONTENDERS:
        extra = "" if contender == "core" else f"   env overhead {per_step[contender] - core:>9,.0f} ({per_step[contender] / core:.2f}x core)"
        print(f"{contender:<8} {per_step[contender]:>9,.0f}{extra}")
    if args.parts:
        print(parts_table(per_step))


def parts_table(per_step: dict[str, float]) -> str:
    """raw_env's own instructions a step, by what the step reads (markdown)."""
    own = per_step["raw"] - per_step["core"]
    text = per_step["raw"] - per_step["no_text"]
    rows = (
        ("step() alone (acting, the reward account, PettingZoo's turn)", per_step["step"] - per_step["core"]),
        ("infos[agent] (mask, reward components, the dict)", per_step["info"] - per_step["step"]),
        ("observe(agent), less the text features", per_step["observation"] - per_step["info"] - text),
        ("the ticket text's features (hashing, once a ticket)", text),
        ("last()'s own (cumulative reward, PettingZoo's last)", per_step["raw"] - per_step["observation"]),
    )
    lines = ["", "| raw_env's own instructions a step | instructions | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {value:,.0f} | {value / own:.0%} |" for name, value in rows]
    lines.append(f"| all | {own:,.0f} | 100% |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
