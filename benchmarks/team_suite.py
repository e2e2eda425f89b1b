"""The team suite: does the team reward order teams as their manager would?

Plays every scripted team of ``csr_marl.whatif.team_suite.TEAMS`` (six honest ones and the shortcut
teams of ``csr_marl.policies.shortcuts``) on the same days (seeds 0..N-1) in three settings: standard_day
at its written staffing, standard_day with six at the escalation desk, and the surge day. Prints, per
setting, every team's mean team return and manager's score with the paired difference against the
heuristic and its 95% interval, Kendall's tau between the two orders, and the target lines;
``--write`` writes ``benchmarks/results/team_suite.md`` and ``team_suite.json``.

    nice python benchmarks/team_suite.py --days 20            # print only
    nice python benchmarks/team_suite.py --days 20 --write    # regenerate the page
    python benchmarks/team_suite.py --render                  # rewrite the page from team_suite.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from csr_marl.policies.shortcuts import SHORTCUTS
from csr_marl.whatif.team_suite import REFERENCE, SETTINGS, TEAMS, SuiteRun, run_suite

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def interval(run: SuiteRun, table: dict[str, list[float]], team: str) -> str:
    if team == REFERENCE:
        return "--"
    mean, low, high = run.paired(table, team)
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"


def section(run: SuiteRun) -> list[str]:
    rows = sorted(run.returns, key=lambda t: -run.mean(run.scores, t))
    lines = [
        f"## {run.setting}", "",
        "| team | kind | team return | paired vs heuristic (95%) | manager's score (USD) | paired vs heuristic (95%) |",
        "|---|---|---:|---|---:|---|",
    ]
    for team in rows:
        kind = "shortcut" if team in SHORTCUTS else "uniform at random" if team == "random" else "honest"
        lines.append(
            f"| {team} | {kind} | {run.mean(run.returns, team):.1f} | {interval(run, run.returns, team)} "
            f"| {run.mean(run.scores, team):.0f} | {interval(run, run.scores, team)} |"
        )
    failed = run.failures()
    lines += [
        "", f"Kendall's tau-b between the teams' mean team return and mean manager's score: **{run.tau():.3f}**.", "",
        f"- Target: team reward orders teams as the manager's score on {run.setting}: tau {run.tau():.3f} >= 0.9, "
        f"every shortcut below {REFERENCE} with its paired interval below zero, no shortcut above an honest team "
        f"it loses to on the score: **{'met' if not failed else 'not met'}**",
    ]
    lines += [f"  - fails: {reason}" for reason in failed]
    return lines + [""]


def page(runs: list[SuiteRun], seconds: float) -> str:
    days = len(runs[0].seeds)
    head = [
        "# Team suite: the team reward against the manager's score", "",
        f"Fourteen scripted teams play the same {days} days (seeds 0-{days - 1}: the same customers for every "
        "team) in three settings: `standard_day` at its written staffing (2 triage, 10 resolvers, 2 at the desk), "
        "`standard_day` with six at the escalation desk (`staffing.escalation: 6`), and the `surge` day. The "
        "**team return** is the shared team reward summed over the day; the **manager's score** is what the day "
        "earned in USD by the scenario's `manager:` rates ([the manager's score](../../concepts/manager_score.md)). "
        "Paired differences are the team's figure minus the heuristic's on the same day, with a 95% t-interval "
        "over days. Honest teams work the tickets as well as they can; shortcut teams "
        "(`csr_marl.policies.shortcuts`, and `escalate_all`) take one habit a manager would not pay for.", "",
        f"Regenerate with `nice python benchmarks/team_suite.py --days {days} --write` ({seconds:.0f} s of wall time on two shared cores). "
        "The CI test (`tests/test_team_suite.py`) plays the written staffing on short days; its slow test all "
        "three settings.", "",
    ]
    body = [line for run in runs for line in section(run)]
    return "\n".join(head + body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/team_suite.{md,json}")
    parser.add_argument("--render", action="store_true", help="rewrite the page from team_suite.json (seconds)")
    args = parser.parse_args()
    if args.render:
        data = json.loads((RESULTS / "team_suite.json").read_text())
        runs = [SuiteRun(setting, d["seeds"], d["returns"], d["scores"]) for setting, d in data["settings"].items()]
        (RESULTS / "team_suite.md").write_text(page(runs, data["seconds"]))
        return
    start = time.perf_counter()
    runs = []
    for setting in args.settings:
        run = run_suite(setting, range(args.days), TEAMS)
        runs.append(run)
        print("\n".join(section(run)), flush=True)
    seconds = time.perf_counter() - start
    if args.write:
        (RESULTS / "team_suite.md").write_text(page(runs, seconds))
        data = {"seconds": seconds, "settings": {
            run.setting: {"seeds": run.seeds, "returns": run.returns, "scores": run.scores} for run in runs
        }}
        (RESULTS / "team_suite.json").write_text(json.dumps(data, indent=1))
        print(f"wrote {RESULTS / 'team_suite.md'}")


if __name__ == "__main__":
    main()
