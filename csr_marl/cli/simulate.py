"""``csr-marl simulate`` and ``csr-marl scenarios``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config.loading import load_scenario, scenario_names
from ..sim.kpis import TicketLog, kpi_definitions, scenario_headline_queue
from ..simulation import simulate
from .common import check_output_file, console, fmt, friendly_errors, kpi_table, parse_sets, print_definitions
from .train import policy_from_option

HEADLINE = (
    "offered", "answered", "resolved", "abandoned", "closed_unresolved", "escalated", "reopened",
    "in_system_at_end", "service_level", "asa_minutes", "wait_p90_minutes", "service_level_first_response",
    "abandonment_rate",
    "first_contact_resolution", "escalation_rate", "sla_attainment", "occupancy_triage",
    "occupancy_resolver", "occupancy_escalation", "triage_accuracy", "reply_score_mean", "sentiment_mean",
    "upset_rate",
)


@friendly_errors
def scenarios_command() -> None:
    """List the scenarios shipped with csr_marl."""
    table = Table(title="scenarios", title_justify="left")
    table.add_column("name")
    table.add_column("description")
    for name in scenario_names():
        table.add_row(name, load_scenario(name).description)
    console.print(table)


@friendly_errors
def simulate_command(
    scenario: str = typer.Argument("standard_day", help="Scenario name (see `csr-marl scenarios`) or YAML path."),
    policy: str = typer.Option(
        "heuristic", "--policy", "-p",
        help="heuristic (knowledge base: the train split), heuristic_full (the whole bank), random, fifo, "
        "escalate_all, or checkpoint:PATH (a team trained by csr-marl train).",
    ),
    seed: int = typer.Option(0, "--seed", "-s", help="Root seed; same seed, same result."),
    sets: Optional[list[str]] = typer.Option(None, "--set", help="Override KEY=VALUE (dotted path, YAML value); repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print all KPIs and breakdowns as JSON."),
    log: Optional[Path] = typer.Option(None, "--log", help="Write a per-contact log (.csv or .jsonl); a new file."),
    force: bool = typer.Option(False, "--force", help="Replace the --log file if it exists."),
) -> None:
    """Run one episode with a built-in or trained policy and print the KPI table."""
    scn = load_scenario(scenario, parse_sets(sets))
    chosen = policy_from_option(policy, scn)
    if log is not None:
        check_output_file(log, "--log", TicketLog.SUFFIXES, replace=force)
    result = simulate(scn, policy=chosen, seed=seed, log=log or False)
    if as_json:
        payload = {
            "scenario": result.scenario, "seed": seed, "policy": policy,
            "team_return": result.team_return, "kpis": result.kpis, "breakdown": result.breakdown,
            "reward_components": result.reward_components, "flow": result.flow,
            "definitions": kpi_definitions(scenario_headline_queue(scn), scn.service_level.threshold_minutes),
        }
        print(json.dumps(payload, indent=2, default=_json_default))
        return
    rows = {key: result.kpis[key] for key in HEADLINE if not _nan(result.kpis.get(key))}
    rows["team_return"] = result.team_return
    threshold = scn.service_level.threshold_minutes
    title = f"{scn.name} · policy={policy} · seed={seed} · {scn.horizon_minutes:g} min"
    console.print(kpi_table(title, rows))
    definitions = kpi_definitions(scenario_headline_queue(scn), threshold)
    print_definitions(("service_level", "asa_minutes", "service_level_first_response", "occupancy_<role>"), definitions)
    console.print(f"[dim]KPIs count contacts arriving after the {scn.warmup_minutes:g}-minute warm-up.[/]")
    columns = {"offered": "offered", "resolved": "resolved", "abandoned": "abandoned",
               "service_level": "SL", "asa_minutes": "ASA min", "sla_attainment": "SLA met"}
    by_priority = Table(title="by priority", title_justify="left")
    by_priority.add_column("priority")
    for header in columns.values():
        by_priority.add_column(header, justify="right")
    for name, row in result.breakdown["priority"].items():
        by_priority.add_row(name, *(fmt(row[key]) for key in columns))
    console.print(by_priority)

def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _json_default(value: object) -> object:
    return None if _nan(value) else str(value)
