"""``csr-marl staff``: the least headcount per role meeting every target, confirmed by simulation."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config.domain import ROLES
from ..config.loading import load_scenario
from ..whatif import StaffingAnswer, parse_targets, search_staffing
from ..whatif.interval_planner import MAX_REPLICATIONS, REPLICATIONS, plan_intervals
from ..whatif.staffing import ANALYST_POLICY
from ..whatif.executors import executor_scope
from .common import check_output_file, console, escape, friendly_errors, note, parse_sets, print_definitions, print_json, with_overrides
from ..whatif.errors import StudyError
from ..whatif.forecast import rostered
from .forecast import Staffing, staff_forecast
from .intervals import interval_target, show_plan
from .sweep import BACKEND, RAY_ADDRESS, SEED, SETS, TARGETS, WORKERS, check_backend

SHOWN = ("service_level", "abandonment_rate", "asa_minutes", "sla_attainment")


@friendly_errors
def staff_command(
    scenario: Optional[str] = typer.Argument(None, help="Scenario name or YAML path (not with --forecast)."),
    targets: Optional[list[str]] = TARGETS,
    roles: Optional[list[str]] = typer.Option(None, "--role", help=f"Role to size ({', '.join(ROLES)}); repeatable. \\[default: every staffed role]"),
    policy: str = typer.Option(ANALYST_POLICY, "--policy", "-p", help="Built-in policy the staff follow (expert: staff who know every issue; heuristic: the fair RL baseline)."),
    sets: Optional[list[str]] = SETS,
    seed: Optional[int] = SEED,
    min_replications: int = typer.Option(10, "--min-replications", help="Replications per headcount to start with (and per extra batch)."),
    max_replications: Optional[int] = typer.Option(None, "--max-replications", min=2, help="Stop adding replications here even if a CI still straddles a target (--by-interval: the cap of each simulation round and of the check, where an interval still straddling it is undecided). \\[default: 60; --by-interval 100, --precise 400]"),
    max_headcount: Optional[int] = typer.Option(None, "--max-headcount", min=0, help="Largest headcount to try per role. \\[default: 3 x max(Erlang, current) + 10]"),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    by_interval: bool = typer.Option(False, "--by-interval", help="A headcount per role per interval instead: an analytic plan corrected by simulation rounds, textbook SIPP beside it (target: service_level>=X)."),
    interval: Optional[int] = typer.Option(None, "--interval", help="--by-interval: interval width, 15, 30 or 60 minutes. \\[default: the scenario's, 30]"),
    replications: Optional[int] = typer.Option(None, "--replications", "-r", help="--by-interval: replications each simulation round and the check start with (doubled while a CI straddles the target). \\[default: 60; --precise 240]"),
    precise: bool = typer.Option(False, "--precise", help="--by-interval: the same simulation rounds on four times the replications (240 growing to 400) with a margin of 0.01 instead of 0.03: each interval nearer the target, for four to five times the CPU (about three CPU-minutes on a 16-interval day)."),
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", hidden=True, help="Retired (the precise mode's iterative algorithm); ignored with a note."),
    hold: Optional[bool] = typer.Option(None, "--hold/--no-hold", hidden=True, help="Retired (the precise mode's trim); ignored with a note."),
    trim_replications: Optional[int] = typer.Option(None, "--trim-replications", hidden=True, help="Retired (the precise mode's trim); ignored with a note."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="--by-interval: write the requirements (CSV, one row per interval and role) for csr-marl schedule."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="--by-interval: write the interval chart (PNG)."),
    forecast: Optional[Path] = typer.Option(None, "--forecast", help="Forecast CSV: the same as csr-marl forecast FILE.csv --simulate (per-interval requirements, Erlang beside the simulated plan)."),
    within_seconds: float = typer.Option(20.0, "--within-seconds", help="--forecast: the service level's threshold."),
    patience_seconds: Optional[float] = typer.Option(None, "--patience-seconds", help="--forecast: mean patience (Erlang A and abandonment in the simulation)."),
    scenario_out: Optional[Path] = typer.Option(None, "--scenario-out", help="--forecast: write the scenario that simulates the forecast (YAML), for csr-marl schedule and simulate."),
    shrinkage: float = typer.Option(0.0, "--shrinkage", min=0.0, max=0.99, help="Share of paid time off the floor (0.3 = 30%): rostered heads = on floor / (1 - shrinkage)."),
    max_occupancy: Optional[float] = typer.Option(None, "--max-occupancy", min=0.01, max=1.0, help="Occupancy cap, e.g. 0.85: by interval, at least load / cap on the floor; whole day, the target occupancy_<role><=cap."),
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
) -> None:
    """Start from the Erlang estimate, simulate until the CIs settle, report the least headcount per role.

    With --by-interval: the headcount per role per interval, an analytic plan corrected by simulation,
    textbook SIPP beside it."""
    bounds = parse_targets(targets)
    overrides = parse_sets(sets)
    if forecast is not None:
        if scenario is not None:
            raise StudyError("--forecast builds its own scenario: give the forecast or a scenario, not both")
        for path, option, suffix in ((out, "--out", ".csv"), (scenario_out, "--scenario-out", ".yaml")):
            if path is not None:
                check_output_file(path, option, (suffix,))
        options = Staffing(interval_target(bounds), within_seconds, patience_seconds, shrinkage, max_occupancy,
                           replications or REPLICATIONS, max_replications or MAX_REPLICATIONS, seed or 0)
        with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
            staff_forecast(forecast, options, pool, out, scenario_out, as_json, simulate=True)
        return
    if scenario is None:
        raise StudyError("give a scenario (csr-marl scenarios lists them) or --forecast FILE.csv")
    if max_occupancy is not None and not by_interval:  # the whole-day search takes the cap as targets
        chosen = roles or [r for r in ROLES if load_scenario(scenario, overrides).staffing.peak(r) > 0]
        bounds = [*bounds, *parse_targets([f"occupancy_{role}<={max_occupancy:g}" for role in chosen])]
    if by_interval:
        if interval is not None:
            overrides["service_level.interval_minutes"] = interval
        target = interval_target(bounds)
        for path, option, suffix in ((out, "--out", ".csv"), (plot, "--plot", ".png")):
            if path is not None:
                check_output_file(path, option, (suffix,))
        retired = [name for name, value in (("--max-iterations", max_iterations), ("--hold/--no-hold", hold),
                                            ("--trim-replications", trim_replications)) if value is not None]
        if retired:
            note(f"{', '.join(retired)}: retired and ignored; --precise runs the planner's rounds on four times "
                 "the replications")
        with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
            plan = plan_intervals(
                scenario, target, roles, policy=policy, seed=seed or 0, overrides=overrides,
                replications=replications, max_replications=max_replications, precise=precise,
                executor=pool, report=note,
            )
        show_plan(plan, as_json, out, plot, shrinkage, max_occupancy)
        return
    with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
        answer = search_staffing(
            scenario, bounds, roles, policy=policy, seed=seed or 0, overrides=overrides, executor=pool,
            min_replications=min_replications, max_replications=max_replications or 60, max_headcount=max_headcount,
            report=note,
        )
    if as_json:
        print_json({**answer_payload(answer), "shrinkage": shrinkage,
                    "rostered": {role: rostered(n, shrinkage) for role, n in answer.staffing.items()}})
        return
    print_answer(answer, overrides)
    if shrinkage:
        heads = ", ".join(f"{role}={rostered(n, shrinkage)}" for role, n in answer.staffing.items() if n)
        console.print(f"rostered with {shrinkage:.0%} shrinkage (on floor / (1 - shrinkage)): {heads}", highlight=False)


def answer_payload(answer: StaffingAnswer) -> dict:
    def kpis(evaluation) -> dict | None:
        if evaluation is None:
            return None
        return {
            "staffing": evaluation.staffing, "replications": evaluation.replications,
            "meets_targets": evaluation.feasible, "settled": evaluation.settled, "verdicts": evaluation.verdicts,
            "kpis": {k: e._asdict() for k, e in evaluation.estimates.items()},
        }

    return {
        "scenario": answer.scenario, "policy": answer.policy, "seed": answer.seed,
        "targets": [str(t) for t in answer.targets], "staffing": answer.staffing,
        "roles": {
            r.role: {
                "headcount": r.headcount, "erlang_estimate": r.erlang.headcount, "erlang_basis": r.erlang.basis,
                "peak_load_erlangs": r.erlang.peak_load, "tried": list(r.tried), "at": kpis(r.at), "one_below": kpis(r.below),
            }
            for r in answer.roles
        },
        "replications_run": answer.replications_run, "notes": answer.notes,
    }


def print_answer(answer: StaffingAnswer, overrides: dict | None = None) -> None:
    targets = ", ".join(str(t) for t in answer.targets)
    staffing = ", ".join(f"{role}={n}" for role, n in answer.staffing.items())
    header = with_overrides(f"{answer.scenario} · policy={answer.policy}", overrides)
    console.print(f"[bold]{escape(header)}[/] · least headcount meeting {escape(targets)}: [bold]{staffing}[/]", highlight=False)
    kpis = list(dict.fromkeys([*(t.kpi for t in answer.targets), *SHOWN]))
    for role in answer.roles:
        table = Table(title=f"{role.role}: {role.headcount} · Erlang estimate {role.erlang}", title_justify="left")
        table.add_column("KPI")
        table.add_column("target")
        table.add_column(f"{role.role}={role.headcount} (n={role.at.replications})", justify="right")
        if role.below is not None:
            table.add_column(f"{role.role}={role.headcount - 1} (n={role.below.replications})", justify="right")
        bounds = {t.kpi: t for t in answer.targets}
        for kpi in kpis:
            cells = [kpi, f"{bounds[kpi].op} {bounds[kpi].threshold:g}" if kpi in bounds else ""]
            for evaluation in (role.at, role.below):
                if evaluation is None:
                    continue
                mark = f" {evaluation.verdicts[str(bounds[kpi])]}" if kpi in bounds else ""
                cells.append(f"{evaluation.estimates[kpi]}{mark}")
            table.add_row(*cells)
        console.print(table)
    print_definitions(kpis)
    for remark in answer.notes:
        console.print(f"[yellow]note:[/] {escape(remark)}", highlight=False)
    console.print(f"[dim]{answer.replications_run} replications simulated, mean [95% CI]; targets are settled when the whole CI lies on one side[/]")
