"""``csr-marl simulate`` and ``csr-marl scenarios``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..analysis.manager_score import score_result
from ..config.loading import load_scenario, scenario_names
from ..sim.intervals import interval_definitions, interval_rows_json
from ..sim.kpis import TicketLog, kpi_definitions, scenario_headline_queue
from ..simulation import simulate
from .common import abbreviations, check_output_file, console, escape, fmt, friendly_errors, kpi_table, parse_sets, print_definitions, print_json, queue_label, with_overrides
from ..whatif.staffing import ANALYST_POLICY
from .intervals import interval_table, staffed_roles
from .train import policy_from_option

HEADLINE = (
    "offered", "answered", "resolved", "abandoned", "closed_unresolved", "escalated", "reopened",
    "in_system_at_end", "service_level", "asa_minutes", "wait_p90_minutes", "service_level_first_response",
    "abandonment_rate",
    "first_contact_resolution", "escalation_rate", "sla_attainment", "occupancy_triage",
    "occupancy_resolver", "occupancy_escalation",
)
#: Columns of the team's own work, for RL and LLM studies (``--all``): what the decisions earned.
LEARNING = ("triage_accuracy", "reply_score_mean", "sentiment_mean", "upset_rate")


@friendly_errors
def scenarios_command(
    as_json: bool = typer.Option(False, "--json", help="Print the scenarios (name, description, opening time, hours) as JSON."),
) -> None:
    """List the scenarios shipped with csr_marl."""
    if as_json:
        print_json([{"name": name, "description": s.description, "opens_at": s.opens_at, "horizon_minutes": s.horizon_minutes}
                    for name, s in ((name, load_scenario(name)) for name in scenario_names())])
        return
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
        ANALYST_POLICY, "--policy", "-p",
        help="expert (staff who know every issue; also heuristic_full), heuristic (the fair RL baseline: "
        "knowledge base from the train split), random, fifo, "
        "escalate_all, or checkpoint:PATH (a team trained by csr-marl train).",
    ),
    seed: int = typer.Option(0, "--seed", "-s", help="Root seed; same seed, same result."),
    sets: Optional[list[str]] = typer.Option(None, "--set", help="Override KEY=VALUE (dotted path, YAML value); repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print all KPIs and breakdowns as strict JSON (a KPI not measured is null)."),
    log: Optional[Path] = typer.Option(None, "--log", help="Write a per-contact log (.csv or .jsonl); a new file."),
    force: bool = typer.Option(False, "--force", help="Replace the --log file if it exists."),
    interval: Optional[int] = typer.Option(None, "--interval", help="Interval KPIs every 15, 30 or 60 minutes (service_level.interval_minutes). \\[default: the scenario's, 30]"),
    show_all: bool = typer.Option(False, "--all", help="Add the RL and LLM columns (triage accuracy, reply score, sentiment, upset rate, team return) to the KPI table."),
) -> None:
    """Run one episode with a built-in or trained policy and print the KPI table and the interval table."""
    overrides = parse_sets(sets)
    if interval is not None:
        overrides["service_level.interval_minutes"] = interval
    scn = load_scenario(scenario, overrides)
    chosen = policy_from_option(policy, scn)
    if log is not None:
        check_output_file(log, "--log", TicketLog.SUFFIXES, replace=force)
    result = simulate(scn, policy=chosen, seed=seed, log=log or False)
    score = score_result(result, scn.manager)
    if as_json:
        payload = {
            "scenario": result.scenario, "seed": seed, "policy": policy,
            "team_return": result.team_return, "kpis": result.kpis, "breakdown": result.breakdown,
            "reward_components": result.reward_components, "flow": result.flow,
            "manager_score": {"currency": score.currency, "total": score.total, "net": score.net,
                              "idle_staff": score.idle_staff, "lines": score.lines},
            "definitions": kpi_definitions(scenario_headline_queue(scn), scn.service_level.threshold_minutes),
            "interval_minutes": scn.service_level.interval_minutes,
            "intervals": interval_rows_json(result.intervals),
            "interval_definitions": interval_definitions(scenario_headline_queue(scn), scn.service_level.threshold_minutes),
        }
        print_json(payload)
        return
    queue = scenario_headline_queue(scn)
    shown = HEADLINE + LEARNING if show_all else HEADLINE
    rows = {queue_label(key, queue): result.kpis[key] for key in shown if not _nan(result.kpis.get(key))}
    rows[f"manager_score ({score.currency})"] = score.total
    if show_all:
        rows["team_return"] = result.team_return
    threshold = scn.service_level.threshold_minutes
    title = with_overrides(f"{scn.name} · policy={policy} · seed={seed} · {scn.horizon_minutes:g} min", overrides)
    console.print(kpi_table(title, rows))
    definitions = kpi_definitions(queue, threshold)
    defined = ("service_level", "asa_minutes", "service_level_first_response", "occupancy_<role>", "manager_score")
    print_definitions(defined + (LEARNING + ("team_return",) if show_all else ()), definitions)
    console.print(f"[dim]KPIs count contacts arriving after the {scn.warmup_minutes:g}-minute warm-up.[/]")
    columns = {"offered": "offered", "resolved": "resolved", "abandoned": "abandoned",
               "service_level": "SL", "asa_minutes": "ASA", "sla_attainment": "SLA met"}
    by_priority = Table(title=f"by priority (SL and ASA: the {queue} queue)", title_justify="left")
    by_priority.add_column("priority")
    by_priority.add_column("SLA", justify="right")
    for header in columns.values():
        by_priority.add_column(header, justify="right")
    for name, row in result.breakdown["priority"].items():
        by_priority.add_row(name, f"{scn.sla_minutes.get(name, math.nan):g}", *(fmt(row[key]) for key in columns))
    console.print(by_priority)
    width = scn.service_level.interval_minutes
    console.print(interval_table(result.intervals, staffed_roles(result.intervals),
                                 f"per {width}-minute interval · SL and ASA: the {scenario_headline_queue(scn)} queue",
                                 scn.opens_at))
    abbreviations({
        "SLA": "the priority's service-level agreement: minutes from arrival to resolution (sla_minutes)",
        "SL": f"service level: share answered from the {queue} queue within {threshold:g} min",
        "ASA": f"average speed of answer: mean wait in the {queue} queue, minutes",
        "SLA met": "share of contacts resolved within their priority's SLA (sla_attainment)",
        "–": "not measured (no contact of that kind)",
    })
    if log is not None:
        console.print(f"[dim]wrote the per-contact log {escape(str(log))} ({result.kpis['offered']:,.0f} contacts offered)[/]", highlight=False, soft_wrap=True)


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)

