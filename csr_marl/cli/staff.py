"""``csr-marl staff``: the least headcount per role meeting every target, confirmed by simulation."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config.domain import ROLES
from ..whatif import StaffingAnswer, parse_targets, search_staffing
from ..whatif.interval_staffing import plan_interval_staffing
from ..whatif.staffing import ANALYST_POLICY
from ..whatif.executors import executor_scope
from .common import check_output_file, console, escape, friendly_errors, note, parse_sets, print_definitions, print_json, with_overrides
from .intervals import interval_target, show_plan
from .sweep import BACKEND, RAY_ADDRESS, SEED, SETS, TARGETS, WORKERS, check_backend

SHOWN = ("service_level", "abandonment_rate", "asa_minutes", "sla_attainment")


@friendly_errors
def staff_command(
    scenario: str = typer.Argument(..., help="Scenario name or YAML path."),
    targets: Optional[list[str]] = TARGETS,
    roles: Optional[list[str]] = typer.Option(None, "--role", help=f"Role to size ({', '.join(ROLES)}); repeatable. \\[default: every staffed role]"),
    policy: str = typer.Option(ANALYST_POLICY, "--policy", "-p", help="Built-in policy the staff follow (expert: staff who know every issue; heuristic: the fair RL baseline)."),
    sets: Optional[list[str]] = SETS,
    seed: Optional[int] = SEED,
    min_replications: int = typer.Option(10, "--min-replications", help="Replications per headcount to start with (and per extra batch)."),
    max_replications: int = typer.Option(60, "--max-replications", help="Stop adding replications here even if a CI still straddles a target (--by-interval: the cap of each plan's check; an interval still straddling it is undecided)."),
    max_headcount: Optional[int] = typer.Option(None, "--max-headcount", min=0, help="Largest headcount to try per role. \\[default: 3 x max(Erlang, current) + 10]"),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    by_interval: bool = typer.Option(False, "--by-interval", help="A headcount per role per interval instead: SIPP beside the iterative staffing algorithm, both simulated (target: service_level>=X)."),
    interval: Optional[int] = typer.Option(None, "--interval", help="--by-interval: interval width, 15, 30 or 60 minutes. \\[default: the scenario's, 30]"),
    replications: int = typer.Option(20, "--replications", "-r", help="--by-interval: replications per iteration and per check."),
    max_iterations: int = typer.Option(8, "--max-iterations", help="--by-interval: iterations of the staffing algorithm at most."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="--by-interval: write the requirements (CSV, one row per interval and role) for csr-marl schedule."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="--by-interval: write the interval chart (PNG)."),
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
) -> None:
    """Start from the Erlang estimate, simulate until the CIs settle, report the least headcount per role.

    With --by-interval: the headcount per role per interval, SIPP beside the iterative algorithm."""
    bounds = parse_targets(targets)
    overrides = parse_sets(sets)
    if by_interval:
        if interval is not None:
            overrides["service_level.interval_minutes"] = interval
        target = interval_target(bounds)
        for path, option, suffix in ((out, "--out", ".csv"), (plot, "--plot", ".png")):
            if path is not None:
                check_output_file(path, option, (suffix,))
        with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
            plan = plan_interval_staffing(
                scenario, target, roles, policy=policy, seed=seed or 0, overrides=overrides,
                replications=replications, max_replications=max_replications, max_iterations=max_iterations,
                executor=pool, report=note,
            )
        show_plan(plan, as_json, out, plot)
        return
    with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
        answer = search_staffing(
            scenario, bounds, roles, policy=policy, seed=seed or 0, overrides=overrides, executor=pool,
            min_replications=min_replications, max_replications=max_replications, max_headcount=max_headcount,
            report=note,
        )
    if as_json:
        print_json(answer_payload(answer))
        return
    print_answer(answer, overrides)


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
    for note in answer.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    console.print(f"[dim]{answer.replications_run} replications simulated, mean [95% CI]; targets are settled when the whole CI lies on one side[/]")
