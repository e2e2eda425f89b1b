"""Files of an agent run: the baseline table (as ``csr-marl baseline`` writes it), pass^k, per-ticket tries.

* ``agent_baseline.md/.json/.csv``: KPIs and team return, mean and 95% CI over episodes, the same
  layout and columns as every ``<policy>_baseline`` file, so the rows sit side by side;
* ``agent_passk.md/.json``: pass^k per ticket and per episode for k = 1..K, with the success rule;
* ``agent_tickets.csv``: one row per ticket the model handled per try (the inputs of pass^k).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..whatif import store
from ..whatif.baselines import write_baseline_report
from ..whatif.provenance import now, versions
from .players import describe_team
from .runner import POLICY_LABEL, AgentReport, TicketTry

TICKET_COLUMNS = tuple(TicketTry.__dataclass_fields__)


def passk_markdown(report: AgentReport) -> str:
    """pass^j for j = 1..k, per ticket and per episode, as a Markdown table."""
    curves = report.pass_hat()
    header = "| tasks | n | " + " | ".join(f"pass^{j}" for j in range(1, report.k + 1)) + " |"
    lines = [header, "|---|---:|" + "---:|" * report.k]
    counts = {"ticket": report.ticket_tasks(), "episode": report.episodes}
    for unit, curve in curves.items():
        lines.append(f"| {unit} | {counts[unit]} | " + " | ".join(_cell(curve[j]) for j in range(1, report.k + 1)) + " |")
    return "\n".join(lines)


def passk_payload(report: AgentReport, command: str) -> dict[str, Any]:
    curves = report.pass_hat()
    return {
        "scenario": report.scenario,
        "team": report.team,
        "model": report.model,
        "episodes": report.episodes,
        "k": report.k,
        "seed": report.seed,
        "success_rule": report.success_rule,
        "grade_threshold": report.grade_threshold,
        "episode_bar": report.episode_bar,
        "pass_hat_k": {unit: {str(j): value for j, value in curve.items()} for unit, curve in curves.items()},
        "tasks": {"ticket": report.ticket_tasks(), "episode": report.episodes},
        "plays": [
            {key: value for key, value in asdict(play).items() if key not in ("record", "tickets")}
            for play in report.plays
        ],
        "generated_at": now(),
        "command": command,
        "versions": versions(),
    }


def write_agent_report(report: AgentReport, out_dir: str | Path, *, command: str) -> list[Path]:
    """Write every file of the run into ``out_dir`` (each atomically); the paths written."""
    folder = Path(out_dir)
    paths = write_baseline_report(report.rows(), folder, seed=report.seed, command=command)
    markdown = "\n".join([
        f"# pass^k of `{report.model or 'no model'}` on `{report.scenario}`",
        "",
        f"Team: `{describe_team(report.team)}`; {report.episodes} episodes x {report.k} tries "
        f"(episode e: numpy `SeedSequence(entropy={report.seed}, spawn_key=(e,))`).",
        "",
        passk_markdown(report),
        "",
        f"Success: {report.success_rule}",
        "",
        f"- generated: {now()} by `{command}`",
        "",
    ])
    tickets = [asdict(t) for play in report.plays for t in play.tickets]
    return paths + [
        store.atomic_write(folder / f"{POLICY_LABEL}_passk.md", markdown),
        store.write_json(folder / f"{POLICY_LABEL}_passk.json", passk_payload(report, command)),
        store.write_csv(folder / f"{POLICY_LABEL}_tickets.csv", TICKET_COLUMNS, tickets),
    ]


def _cell(value: float) -> str:
    return "–" if value != value else f"{value:.3f}"
