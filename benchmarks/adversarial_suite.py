"""The adversarial suite: policies that skip the work against the ladder, on every named task.

Plays every policy of ``csr_marl.text.adversarial.SUITE`` on the eight named tasks and the default text
day (the standard day until 30 tickets are closed, every role played), held-out seeds 0-39, in process,
and the adaptive adversary (``csr_marl.text.adaptive``): its reply is searched on training seeds
1000-1002 and scored on the held-out seeds. Prints the table with paired 95% intervals against
boilerplate and the targets; ``--write`` writes ``benchmarks/results/adversarial_suite.md`` and
``adversarial_suite.json`` (every score). The same episodes over ``csr-marl serve`` are checked by
tests/test_adversarial.py's slow test.

    python benchmarks/adversarial_suite.py             # print only
    python benchmarks/adversarial_suite.py --write     # regenerate the page
    python benchmarks/adversarial_suite.py --jobs 2    # tasks in two processes (the same figures)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from csr_marl.text.adaptive import play_reply, search
from csr_marl.text.adversarial import (
    ADVERSARIES, DEFAULT_DAY, DEFAULT_DAY_OVERRIDES, SUITE, SuiteRun, missed_targets, paired, run_suite, suite_session,
)
from csr_marl.text.scoring import SCORING_VERSION
from csr_marl.text.tasks import GRPO_TASKS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TASKS = (*GRPO_TASKS, DEFAULT_DAY)
TRAIN_SEEDS = range(1000, 1003)  # the adaptive search's training seeds (never scored on the page)

#: What the page says about the yardstick and the scale (scoring v4).
READING = (
    "The yardstick is what a contact center's macro writes: `boilerplate` does the heuristic's steps and "
    "closes with the customer's name, the order id and amount, an apology and the actions taken, filled in "
    "from the ticket (`csr_marl.sim.responses.macro_reply`), never what a lookup found. On a ticket that "
    "needs no lookup that is everything there is to say, so no reply that reads nothing can beat it; on "
    "the others the gap to `careful` is what reading earns. Scores lie in [-1, 1]: a ticket where the "
    "caller did damage (a refund not owed, to another order or above the amount on record; specialist "
    "work not needed) grades -1, so the `refund_*` rows go below 0."
)


def page(
    run: SuiteRun, adaptive: dict[str, tuple[tuple[str, ...], float, list[float]]], seconds: float, jobs: int = 1,
) -> str:
    seeds = f"{run.seeds[0]}-{run.seeds[-1]}"
    lines = [
        "# Adversarial suite: policies that skip the work",
        "",
        f"Every policy of `csr_marl.text.adversarial` and the adaptive adversary (`csr_marl.text.adaptive`) on "
        f"the eight named tasks and the default text day (`{DEFAULT_DAY}` until "
        f"{DEFAULT_DAY_OVERRIDES['max_tickets']} tickets are closed, every role played), held-out seeds {seeds} "
        f"(the same customers for every policy), scoring v{SCORING_VERSION}. Each row: the mean episode score and "
        "the paired difference from boilerplate with its 95% interval (t over seeds). The adaptive adversary's "
        f"reply is searched on training seeds {TRAIN_SEEDS[0]}-{TRAIN_SEEDS[-1]} (beam search over reply blocks that "
        "never read a lookup, boilerplate's macro among them, so it also tries every block added to the macro) and "
        "scored here. Regenerate with "
        f"`python benchmarks/adversarial_suite.py --seeds {len(run.seeds)}{f' --jobs {jobs}' if jobs > 1 else ''} "
        f"--write` ({seconds:.0f} s here, "
        f"{jobs} process{'es' if jobs > 1 else ''} on a shared 2-core machine).",
        "",
        "Targets on every task (`csr_marl.text.adversarial.missed_targets`): every adversary, fixed or "
        "adaptive, below boilerplate (the paired interval below 0; a policy that plays exactly as boilerplate "
        "on every seed has no shortcut on the task and is listed apart); careful at least 0.25 above the best "
        "of them and at least 0.85; on the resolver tasks `copied_lookup` (a terse reply that copies the "
        "lookups' fields) within 0.15 of careful.",
        "",
        READING,
        "",
    ]
    for task in TASKS:
        blocks, train_mean, values = adaptive[task]
        failed = missed_targets(run, task, values)
        boiler = run.scores[(task, "boilerplate")]
        scored = {policy: run.scores[(task, policy)] for policy in SUITE} | {"adaptive": values}
        same = [p for p in (*ADVERSARIES, "adaptive") if scored[p] == boiler]
        nothing = [p for p in scored if p not in same and not any(scored[p])]
        lines += [f"## {task}", "", f"| policy | mean | minus boilerplate ({sum(boiler) / len(boiler):.3f}) [95%] |",
                  "|---|---:|---|"]
        for policy, scores in scored.items():
            if policy in same or policy in nothing or policy == "boilerplate":
                continue
            mean, low, high = paired(scores, boiler)
            lines.append(f"| {policy} | {sum(scores) / len(scores):.3f} | {mean:+.3f} [{low:+.3f}, {high:+.3f}] |")
        lines += ["", f"- Adaptive adversary's best reply: blocks `{' + '.join(blocks) or '(empty)'}` "
                  f"(training mean {train_mean:.3f})."]
        if nothing:
            lines.append("- 0 on every seed: " + ", ".join(f"`{p}`" for p in nothing) + ".")
        if same:
            lines.append("- Playing exactly as boilerplate on every seed (no such shortcut on this task): "
                         + ", ".join(f"`{p}`" for p in same) + ".")
        status = "**met**" if not failed else "**missed**: " + "; ".join(failed)
        lines += [f"- Target: adversaries vs boilerplate on {task}: {status}", ""]
    return "\n".join(lines)


def task_run(task: str, seeds: range, beam: int) -> tuple[dict, tuple[tuple[str, ...], float, list[float]]]:
    """One task: every policy's scores on ``seeds``, and the adaptive adversary's blocks, training mean and
    held-out scores."""
    run = run_suite([task], seeds)
    found = search(task, TRAIN_SEEDS, beam=beam, rounds=6)
    session = suite_session(task)
    held = [play_reply(session, found.blocks, seed) for seed in seeds]
    print(task, found.blocks, f"train {found.train_mean:.3f} held-out {sum(held) / len(held):.3f}", flush=True)
    return run.scores, (found.blocks, found.train_mean, held)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--beam", type=int, default=1, help="the adaptive search's beam width")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/adversarial_suite.md")
    parser.add_argument("--jobs", type=int, default=1, help="processes, one task at a time each")
    args = parser.parse_args()
    started = time.perf_counter()
    seeds = range(args.seeds)
    order = sorted(TASKS, key=lambda task: task != DEFAULT_DAY)  # the long day first
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = dict(zip(order, pool.map(task_run, order, [seeds] * len(order), [args.beam] * len(order))))
    run = SuiteRun(tuple(seeds))
    adaptive = {}
    for task in TASKS:
        run.scores.update(done[task][0])
        adaptive[task] = done[task][1]
    seconds = time.perf_counter() - started
    text = page(run, adaptive, seconds, args.jobs)
    print(text)
    if args.write:
        target = RESULTS / "adversarial_suite.md"
        tmp = target.with_suffix(".md.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, target)
        data = {f"{task}|{policy}": values for (task, policy), values in run.scores.items()}
        data |= {f"{task}|adaptive": held for task, (_, _, held) in adaptive.items()}
        data |= {f"{task}|adaptive blocks": list(blocks) for task, (blocks, _, _) in adaptive.items()}
        lines = ",\n".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in data.items())
        (RESULTS / "adversarial_suite.json").write_text("{\n" + lines + "\n}\n")  # one key a line
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
