"""``csr-marl schedule``: per-interval requirements -> a shift schedule (OR-Tools CP-SAT) -> simulated.

The loop analysts run: size each interval (the interval planner, or a requirements CSV from
``csr-marl staff --by-interval --out`` or ``csr-marl forecast --out``), choose shifts from templates
(least paid hours covering every interval, or least shortfall under a headcount budget), then simulate
the schedule and report each interval's service level with its 95% CI against the target, and the paid
hours against the required ones. The default templates follow a plan closely: a start every 30 minutes
across the day, paid lengths of 2 to 8 hours. Writes, into ``--out`` (an existing ``schedule.csv`` is
replaced only with ``--force``):

- ``schedule.csv``: one row per shift worked (role, start, end, break, staff);
- ``scenario.yaml``: the scenario staffed by the schedule (``staffing.shifts``), ready to simulate;
- ``intervals.csv``: per interval, required and scheduled headcount and the simulated service level;
- ``requirements.csv`` (when computed here) and ``interval_chart.png``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..config.domain import ROLES
from ..config.scenario import MAX_HEADCOUNT
from ..config.loading import load_scenario
from ..config.scenario import Scenario, clock_time
from ..whatif import parse_targets
from ..whatif.errors import StudyError
from ..whatif.executors import executor_scope
from ..whatif.forecast import rostered
from ..whatif.grid import parse_values
from ..whatif.interval_chart import interval_chart_png
from ..whatif.interval_runs import interval_starts, scenario_with_plan
from ..whatif.interval_planner import MAX_REPLICATIONS, REPLICATIONS, check_plan, plan_intervals
from ..whatif.interval_staffing import PlanCheck
from ..whatif.schedule import Schedule, read_requirements, schedule_rows, shift_templates, solve_schedule
from ..whatif.staffing import ANALYST_POLICY
from ..whatif.store import atomic_write
from .common import UsageError, check_output_folder, console, escape, friendly_errors, note, parse_sets, print_json, warn
from .intervals import VERDICT_LEGEND, csv_text, interval_target, plan_rows, scenario_yaml, verdict_cell
from .sweep import BACKEND, RAY_ADDRESS, SEED, SETS, TARGETS, WORKERS, check_backend


#: Default paid shift lengths (minutes): 2 to 8 hours, so the schedule can follow the plan's shape.
DEFAULT_LENGTHS = "120,180,240,300,360,420,480"
#: Default over-staffing share above which ``schedule`` warns.
MAX_OVER = 0.08


@friendly_errors
def schedule_command(
    scenario: str = typer.Argument(..., help="Scenario name or YAML path."),
    targets: Optional[list[str]] = TARGETS,
    roles: Optional[list[str]] = typer.Option(None, "--role", help="Role to schedule; repeatable. \\[default: every staffed role]"),
    requirements: Optional[Path] = typer.Option(None, "--requirements", help="Requirements CSV (csr-marl staff --by-interval --out); default: compute them here."),
    use: str = typer.Option("iterative", "--use", help="Which requirement to schedule: iterative (the interval plan) or sipp."),
    starts: Optional[str] = typer.Option(None, "--starts", help="Shift start minutes: 0..240:30 or 0,60,120. \\[default: every 30 minutes across the day]"),
    lengths: str = typer.Option(DEFAULT_LENGTHS, "--lengths", help="Paid shift lengths in minutes (those longer than the day are dropped)."),
    max_over: float = typer.Option(MAX_OVER, "--max-over", min=0.0, help="Warn when the paid hours exceed the required ones by more than this share."),
    force: bool = typer.Option(False, "--force", help="Replace the schedule in --out if there is one."),
    breaks: Optional[list[str]] = typer.Option(None, "--break", help="LENGTH:MINUTES, e.g. 480:30: shifts of that length take a break within an hour of their middle; repeatable."),
    budget: Optional[int] = typer.Option(None, "--budget", help="At most this many staff per role (1 to 1000): least shortfall instead of least cost."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (created)."),
    interval: Optional[int] = typer.Option(None, "--interval", help="Interval width, 15, 30 or 60 minutes. \\[default: the scenario's, 30]"),
    policy: str = typer.Option(ANALYST_POLICY, "--policy", "-p", help="Built-in policy the staff follow."),
    replications: int = typer.Option(REPLICATIONS, "--replications", "-r", help="Replications to start each simulation with (the plan's rounds and the check)."),
    shrinkage: float = typer.Option(0.0, "--shrinkage", min=0.0, max=0.99, help="Share of paid time off the floor: rostered heads = scheduled staff / (1 - shrinkage)."),
    as_json: bool = typer.Option(False, "--json", help="Print the shifts and every interval's requirement, coverage and simulated service level as JSON."),
    max_replications: int = typer.Option(MAX_REPLICATIONS, "--max-replications", help="The plan's rounds and the check double their replications up to here while an interval's CI straddles the target (then: undecided)."),
    sets: Optional[list[str]] = SETS,
    seed: Optional[int] = SEED,
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
) -> None:
    """Turn per-interval requirements into shifts with CP-SAT, simulate the schedule, report interval SL vs target."""
    if budget is not None and not 1 <= budget <= MAX_HEADCOUNT:
        raise StudyError(f"--budget {budget}: give the most staff per role the schedule may use, 1 to {MAX_HEADCOUNT}")
    overrides = parse_sets(sets)
    if interval is not None:
        overrides["service_level.interval_minutes"] = interval
    base = load_scenario(scenario, overrides)
    target = interval_target(parse_targets(targets))
    width = base.service_level.interval_minutes
    day = interval_starts(base)
    templates = shift_templates(*_shapes(starts, lengths, base.horizon_minutes, width), _breaks(breaks), width, base.horizon_minutes)
    if use not in ("iterative", "sipp"):
        raise StudyError(f"--use {use!r}: use iterative or sipp")
    if replications < 2:
        raise StudyError(f"--replications must be at least 2 for confidence intervals, got {replications}")
    given = read_requirements(requirements, use, day) if requirements is not None else None
    chosen = _roles(base, roles, given)
    check_output_folder(out, "--out")
    if not force and (out / "schedule.csv").exists():
        raise UsageError(f"--out {out}: holds a schedule already; choose a new folder, or pass --force to replace it")
    say = note
    with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
        if given is None:
            say("sizing every interval: the analytic plan corrected by simulation (textbook SIPP beside it)")
            plan = plan_intervals(base, target, chosen, policy=policy, seed=seed or 0, replications=replications,
                                  max_replications=max_replications, executor=pool, report=say)
            need = plan.requirements(use)
            extra_rows = plan_rows(plan)
        else:
            need, extra_rows = {role: given[role] for role in chosen}, None
        schedule = solve_schedule(need, templates, width, mode="budget" if budget is not None else "cover", budget=budget)
        say(f"schedule {schedule.status.lower()}: {schedule.paid_hours():g} paid staff-hours; simulating it")
        check = check_plan(base, schedule.coverage, target, policy, seed or 0, replications,
                           max(replications, max_replications), pool)
    # Every output is made before any is written: a failure leaves --out as it was.
    scheduled = scenario_with_plan(base, schedule.coverage)
    header = "Written by csr-marl schedule: the scenario staffed by the schedule (staffing.shifts)."
    files: dict[str, str | bytes] = {
        "schedule.csv": csv_text(schedule_rows(schedule, base.opens_at)),
        "scenario.yaml": scenario_yaml(scheduled, f"{base.name}_schedule", [header]),
        "intervals.csv": csv_text(interval_rows(schedule, check, target, base.opens_at)),
    }
    if extra_rows is not None:
        files["requirements.csv"] = csv_text(extra_rows)
    try:
        files["interval_chart.png"] = _chart(base, schedule, check, target)
    except RuntimeError as exc:  # matplotlib missing
        warn(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    written = [str(atomic_write(out / name, content)) for name, content in files.items()]
    if as_json:
        print_json({
            "scenario": base.name, "status": schedule.status, "mode": schedule.mode, "target_service_level": target,
            "opens_at": base.opens_at, "replications": check.replications, "shrinkage": shrinkage,
            "shifts": schedule_rows(schedule, base.opens_at), "intervals": interval_rows(schedule, check, target, base.opens_at),
            "roles": {role: {"on_floor": schedule.headcount(role), "rostered": rostered(schedule.headcount(role), shrinkage),
                             "paid_hours": schedule.paid_hours(role), "shortfall": schedule.shortfall(role)}
                      for role in schedule.coverage},
            "written": written,
        })
        return
    console.print(schedule_table(schedule, check, target, base))
    console.print(f"[dim]{VERDICT_LEGEND}[/]", highlight=False)
    for role in schedule.coverage:
        console.print(
            f"{role}: {schedule.headcount(role)} staff on the floor, rostered {rostered(schedule.headcount(role), shrinkage)} "
            f"with {shrinkage:.0%} shrinkage, {schedule.paid_hours(role):g} paid hours on the floor, "
            f"shortfall {schedule.shortfall(role)} staff-intervals", highlight=False,
        )
    for line, over in paid_against_required(schedule):
        console.print(escape(line), highlight=False)
        if over > max_over:
            warn(f"the schedule pays {over:.0%} more hours than the requirement (above --max-over {max_over:.0%}): "
                 "allow more shift starts or lengths (--starts, --lengths), or check the requirement")
    console.print(f"[dim]wrote {escape(', '.join(written))}[/]", highlight=False, soft_wrap=True)


def _shapes(starts: str | None, lengths: str, horizon: float, width: int) -> tuple[list[float], list[float]]:
    """The template starts and lengths: the options, or starts every 30 minutes across the day and the
    default lengths that fit in it (the whole day when none does)."""
    sizes = parse_values(lengths, f"--lengths {lengths!r}")
    if lengths == DEFAULT_LENGTHS:
        sizes = [n for n in sizes if n <= horizon] or [horizon]
    if starts is not None:
        return parse_values(starts, f"--starts {starts!r}"), sizes
    step = 30 if 30 % width == 0 else width
    return [float(m) for m in range(0, int(horizon - min(sizes)) + 1, int(step))], sizes


def paid_against_required(schedule: Schedule) -> list[tuple[str, float]]:
    """Per role, a line of paid against required staff-hours and the over-staffing share."""
    out = []
    for role, need in schedule.requirements.items():
        required = sum(need) * schedule.width / 60.0
        paid = schedule.paid_hours(role)
        over = paid / required - 1.0 if required else 0.0
        out.append((f"{role}: {paid:g} paid hours against {required:g} required ({over:+.1%})", over))
    return out


def _breaks(items: list[str] | None) -> dict[float, float]:
    out = {}
    for item in items or ():
        length, sep, minutes = item.partition(":")
        try:
            out[float(length)] = float(minutes)
        except ValueError:
            raise StudyError(f"--break {item!r}: expected LENGTH:MINUTES, e.g. 480:30") from None
        if not sep:
            raise StudyError(f"--break {item!r}: expected LENGTH:MINUTES, e.g. 480:30")
    return out


def _roles(base: Scenario, roles: list[str] | None, given: dict[str, list[int]] | None) -> list[str]:
    chosen = list(dict.fromkeys(roles)) if roles else (
        list(given) if given is not None else [r for r in ROLES if base.staffing.peak(r) > 0]
    )
    for role in chosen:
        if role not in ROLES:
            raise StudyError(f"--role {role!r}: unknown role; roles are {', '.join(ROLES)}")
        if given is not None and role not in given:
            raise StudyError(f"--role {role}: the requirements file has no rows for {role}")
    return chosen


def interval_rows(schedule: Schedule, check: PlanCheck, target: float, opens_at: str = "00:00") -> list[dict[str, Any]]:
    rows = []
    for k, start in enumerate(schedule.starts):
        for role in schedule.coverage:
            level, verdict = check.service_level(role)[k], check.verdicts(target, [role])
            rows.append({
                "start_minute": start, "start_time": clock_time(start, opens_at), "role": role,
                "required": schedule.requirements[role][k],
                "scheduled": schedule.coverage[role][k], "offered": round(check.intervals[k]["offered"].mean, 3),
                "service_level": _num(level.mean), "service_level_low": _num(level.low),
                "service_level_high": _num(level.high), "replications": check.replications,
                "verdict": "" if math.isnan(level.mean) else verdict[k],
            })
    return rows


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def schedule_table(schedule: Schedule, check: PlanCheck, target: float, base: Scenario) -> Table:
    table = Table(
        title=f"{base.name} · schedule ({schedule.mode}, {schedule.status.lower()}) simulated over {check.replications} "
        f"replications · service level within {base.service_level.threshold_minutes:g} min, mean [95% CI], target {target:g}",
        title_justify="left",
    )
    table.add_column("interval")
    table.add_column("offered", justify="right")
    for role in schedule.coverage:
        table.add_column(f"{role} need/on", justify="right")
        table.add_column(f"SL {role}", justify="right")
    verdicts = {role: check.verdicts(target, [role]) for role in schedule.coverage}
    for k, start in enumerate(schedule.starts):
        cells = [base.clock(start), f"{check.intervals[k]['offered'].mean:.1f}"]
        for role in schedule.coverage:
            level = check.service_level(role)[k]
            text = str(level) if not math.isnan(level.mean) else "–"
            cells += [f"{schedule.requirements[role][k]}/{schedule.coverage[role][k]}",
                      verdict_cell(text, verdicts[role][k])]
        table.add_row(*cells)
    return table


def _chart(base: Scenario, schedule: Schedule, check: PlanCheck, target: float) -> bytes:
    role = "resolver" if "resolver" in schedule.coverage else next(iter(schedule.coverage))
    busy = [row[f"occupancy_{role}"].mean * row[f"headcount_{role}"].mean for row in check.intervals]
    answered = [row[f"answered_{role}"].mean for row in check.intervals]
    # Contacts a staff member answers per interval at the measured pace: interval minutes / minutes per contact.
    per_contact = sum(b for b in busy if not math.isnan(b)) * schedule.width / max(sum(answered), 1e-9)
    capacity = {} if per_contact <= 0 else {  # nobody worked (or answered): no pace to draw capacity from
        "required": [n * schedule.width / per_contact for n in schedule.requirements[role]],
        "scheduled": [n * schedule.width / per_contact for n in schedule.coverage[role]],
    }
    offered = [row[f"offered_{role}"].mean for row in check.intervals]
    return interval_chart_png(
        schedule.starts, schedule.width, offered, capacity, {"scheduled": check.service_level(role)}, target,
        title=f"{base.name} · {role}s · the schedule simulated, mean and 95% CI over {check.replications} replications",
        service_label=f"service level, {role} queue", opens_at=base.opens_at,
    )
