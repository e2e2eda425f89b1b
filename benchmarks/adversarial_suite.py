"""The adversarial suite: policies that skip the work against the ladder, on every named task.

Plays every policy of ``csr_marl.text.adversarial.SUITE`` on the eight named tasks and the default text
day (the standard day until 30 tickets are closed, every role played), seeds 0-19, in process; with
``--server`` it also starts ``csr-marl serve`` on 127.0.0.1, sends each episode's calls through the
project's client and checks that every score is identical. Prints the table with 95% confidence
intervals and the targets; ``--write`` writes ``benchmarks/results/adversarial_suite.md`` (the
"before" column comes from ``adversarial_suite_v1.json``, the same policies under scoring v1).

    python benchmarks/adversarial_suite.py --server            # print only
    python benchmarks/adversarial_suite.py --server --write    # regenerate the page
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from csr_marl.analysis.stats import mean_ci
from csr_marl.text.adversarial import ADVERSARIES, DEFAULT_DAY, DEFAULT_DAY_OVERRIDES, SUITE, SuiteRun, reset_options, run_suite
from csr_marl.text.tasks import GRPO_TASKS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TASKS = (*GRPO_TASKS, DEFAULT_DAY)


def server_scores(run: SuiteRun) -> dict[tuple[str, str, int], float]:
    """Every recorded episode replayed over a real ``csr-marl serve``: (task, policy, seed) -> score."""
    from csr_marl.serve.replay import replay_episodes

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("csr-marl serve did not come up") from None
                time.sleep(0.3)
        return replay_episodes(url, run.calls, reset_options)
    finally:
        server.terminate()
        server.wait(timeout=30)


def targets(run: SuiteRun, task: str) -> list[str]:
    """The targets that fail on ``task`` (empty: all hold)."""
    mean = {policy: run.mean(task, policy) for policy in SUITE}
    failed = []
    if mean["careful"] < 0.85:
        failed.append(f"careful {mean['careful']:.3f} < 0.85")
    if not mean["idle"] < mean["spam"] < mean["boilerplate"] < mean["careful"]:
        failed.append("idle < spam < boilerplate < careful")
    for policy in ADVERSARIES:
        if mean[policy] > mean["boilerplate"] + 1e-9:
            failed.append(f"{policy} {mean[policy]:.3f} > boilerplate {mean['boilerplate']:.3f}")
        if mean[policy] > mean["careful"] - 0.25 + 1e-9:
            failed.append(f"{policy} {mean[policy]:.3f} within 0.25 of careful")
    return failed


def page(run: SuiteRun, before: dict[str, list[float]], same_on_server: str, seconds: float) -> str:
    seeds = f"{run.seeds[0]}-{run.seeds[-1]}"
    lines = [
        "# Adversarial suite: policies that skip the work",
        "",
        f"Every policy of `csr_marl.text.adversarial` on the eight named tasks and the default text day "
        f"(`{DEFAULT_DAY}` until {DEFAULT_DAY_OVERRIDES['max_tickets']} tickets are closed, every role played), "
        f"seeds {seeds}: the mean episode score with its 95% confidence interval (t, over seeds). "
        "**before** is scoring v1 (the same policies and seeds, measured before this version); **after** "
        "is scoring v2. Regenerate with `python benchmarks/adversarial_suite.py --server --write` "
        f"({seconds:.0f} s here in process).",
        "",
        f"Over `csr-marl serve`: {same_on_server}",
        "",
        "Targets on every task (scoring v2): every adversarial policy's mean is at most boilerplate's and "
        "at least 0.25 below careful; careful at least 0.85; idle < spam < boilerplate < careful.",
        "",
        "`refund_wrong_order` has no v1 figure: v1's refund tools took no order. Confidence intervals are "
        "clipped to [0, 1], where scores lie.",
        "",
    ]
    for task in TASKS:
        failed = targets(run, task)
        lines += [f"## {task}", "", "| policy | before (v1) | after (v2) | 95% CI (v2) |", "|---|---:|---:|---|"]
        for policy in SUITE:
            values = run.scores[(task, policy)]
            mean, low, high = mean_ci(values)
            low, high = max(0.0, low), min(1.0, high)  # scores lie in [0, 1]
            old = before.get(f"{task}|{policy}")
            old_text = f"{sum(old) / len(old):.3f}" if old else "--"
            lines.append(f"| {policy} | {old_text} | {mean:.3f} | [{low:.3f}, {high:.3f}] |")
        # An adversary that plays exactly as boilerplate on every seed has no exploit on this task
        # (no desk to hand off to, no triage to label): the closest is among the others.
        boilerplate = run.scores[(task, "boilerplate")]
        differing = [p for p in ADVERSARIES if run.scores[(task, p)] != boilerplate]
        same = [p for p in ADVERSARIES if p not in differing]
        lines.append("")
        if differing:
            closest = max(differing, key=lambda p: run.mean(task, p))
            margin = run.mean(task, "boilerplate") - run.mean(task, closest)
            lines.append(f"- Closest adversary: `{closest}`, {margin:.3f} below boilerplate "
                         f"({margin / max(run.mean(task, 'boilerplate'), 1e-9):.0%}).")
        if same:
            lines.append("- Playing exactly as boilerplate on every seed here (their shortcut does not exist on "
                         "this task): " + ", ".join(f"`{p}`" for p in same) + ".")
        lines += ["- Targets: " + ("**met**" if not failed else "**missed**: " + "; ".join(failed)), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--server", action="store_true", help="also replay every episode over csr-marl serve")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/adversarial_suite.md")
    args = parser.parse_args()
    started = time.perf_counter()
    run = run_suite(TASKS, range(args.seeds))
    seconds = time.perf_counter() - started
    same = "not checked in this run (`--server`)."
    if args.server:
        served = server_scores(run)
        differ = [key for key, score in served.items() if score != run.scores[key[:2]][run.seeds.index(key[2])]]
        same = (f"all {len(served)} episodes scored identically to the in-process run." if not differ
                else f"{len(differ)} of {len(served)} episodes differ, e.g. {differ[:3]}.")
        print(same)
    before_file = RESULTS / "adversarial_suite_v1.json"
    before = json.loads(before_file.read_text()) if before_file.exists() else {}
    text = page(run, before, same, seconds)
    print(text)
    if args.write:
        target = RESULTS / "adversarial_suite.md"
        tmp = target.with_suffix(".md.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, target)
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
