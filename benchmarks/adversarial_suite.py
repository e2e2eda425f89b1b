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
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from csr_marl.analysis.stats import mean_ci
from csr_marl.text.adaptive import play_reply, search
from csr_marl.text.adversarial import ADVERSARIES, DEFAULT_DAY, DEFAULT_DAY_OVERRIDES, SUITE, SuiteRun, run_suite, suite_session
from csr_marl.text.scoring import SCORING_VERSION
from csr_marl.text.tasks import GRPO_TASKS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TASKS = (*GRPO_TASKS, DEFAULT_DAY)
RESOLVER_TASKS = ("tasks/order_status", "tasks/refund", "tasks/payment_failure", "tasks/one_ticket", "tasks/few_tickets")
TRAIN_SEEDS = range(1000, 1003)  # the adaptive search's training seeds (never scored on the page)


#: What the page says about the targets it misses (the figures are the 40-seed run's).
GAPS = (
    'Two gaps remain where a target is missed. `refund_everything` reads like careful and refunds every '
    "ticket: on the one-ticket tasks (refund, payment_failure) it scores careful's grade on the tickets "
    "owed a refund and 0 on the rest (the episode's score is clipped at 0), and the share owed, about "
    "half, sits near boilerplate's score, so the paired interval straddles 0. On the tasks with tickets "
    "that need no lookup, a reply can only say the customer's name, the actions taken and an apology, and"
    " the canned reply leaves them out: the adaptive adversary's `greeting` and `sorry_canned` gain "
    '+0.000 to +0.017 there. Closing either needs a change beyond the reply rubric (episode scores below '
    "0; identifiers worth nothing on no-lookup tickets, which would change what the RL environments' "
    'documented reply earns).'
)


def paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The mean of ``a - b`` seed by seed and its 95% interval (t, over seeds)."""
    return mean_ci([x - y for x, y in zip(a, b)])


def targets(run: SuiteRun, task: str, adaptive: list[float]) -> list[str]:
    """The targets that fail on ``task`` (empty: all hold), judged on paired differences."""
    scores = run.scores
    boiler, careful = scores[(task, "boilerplate")], scores[(task, "careful")]
    failed = []
    if run.mean(task, "careful") < 0.85:
        failed.append(f"careful {run.mean(task, 'careful'):.3f} < 0.85")
    rivals = {policy: scores[(task, policy)] for policy in ADVERSARIES} | {"adaptive": adaptive}
    for policy, values in rivals.items():
        mean, low, high = paired(values, boiler)
        if values != boiler and high >= 0.0:
            failed.append(f"{policy} - boilerplate {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    best = max(rivals, key=lambda p: sum(rivals[p]))
    gap = run.mean(task, "careful") - sum(rivals[best]) / len(rivals[best])
    if gap < 0.25:
        failed.append(f"careful - {best} {gap:.3f} < 0.25")
    if task in RESOLVER_TASKS:
        mean, low, high = paired(scores[(task, "copied_lookup")], careful)
        if mean < -0.15:
            failed.append(f"copied_lookup - careful {mean:+.3f} below -0.15")
    return failed


def page(run: SuiteRun, adaptive: dict[str, tuple[tuple[str, ...], float, list[float]]], seconds: float) -> str:
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
        "never read a lookup) and scored here. Regenerate with "
        f"`python benchmarks/adversarial_suite.py --seeds {len(run.seeds)} --write` ({seconds:.0f} s here).",
        "",
        "Targets on every task: every adversary, fixed or adaptive, below boilerplate (the paired interval "
        "below 0; a policy that plays exactly as boilerplate on every seed has no shortcut on the task and "
        "is listed apart); careful at least 0.25 above the best of them and at least 0.85; on the resolver "
        "tasks `copied_lookup` (a terse reply that copies the lookups' fields) within 0.15 of careful.",
        "",
        GAPS,
        "",
    ]
    for task in TASKS:
        blocks, train_mean, values = adaptive[task]
        failed = targets(run, task, values)
        boiler = run.scores[(task, "boilerplate")]
        lines += [f"## {task}", "", "| policy | mean | minus boilerplate [95%] |", "|---|---:|---|"]
        same = [p for p in ADVERSARIES if run.scores[(task, p)] == boiler]
        for policy in (*SUITE, "adaptive"):
            if policy in same:
                continue
            scores = values if policy == "adaptive" else run.scores[(task, policy)]
            mean, low, high = paired(scores, boiler)
            lines.append(f"| {policy} | {sum(scores) / len(scores):.3f} | {mean:+.3f} [{low:+.3f}, {high:+.3f}] |")
        lines += ["", f"- Adaptive adversary's best reply: blocks `{' + '.join(blocks) or '(empty)'}` "
                  f"(training mean {train_mean:.3f})."]
        if same:
            lines.append("- Playing exactly as boilerplate on every seed (no such shortcut on this task): "
                         + ", ".join(f"`{p}`" for p in same) + ".")
        status = "**met**" if not failed else "**missed**: " + "; ".join(failed)
        lines += [f"- Target: adversaries vs boilerplate on {task}: {status}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--beam", type=int, default=1, help="the adaptive search's beam width")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/adversarial_suite.md")
    args = parser.parse_args()
    started = time.perf_counter()
    run = run_suite(TASKS, range(args.seeds))
    adaptive = {}
    for task in TASKS:
        found = search(task, TRAIN_SEEDS, beam=args.beam, rounds=6)
        session = suite_session(task)
        held = [play_reply(session, found.blocks, seed) for seed in run.seeds]
        adaptive[task] = (found.blocks, found.train_mean, held)
        print(task, found.blocks, f"train {found.train_mean:.3f} held-out {sum(held) / len(held):.3f}", flush=True)
    seconds = time.perf_counter() - started
    text = page(run, adaptive, seconds)
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
