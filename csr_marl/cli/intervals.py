"""Interval tables and files shared by simulate, staff --by-interval and schedule."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from rich.table import Table

from ..config.domain import ROLES
from ..config.loading import scenarios_dir
from ..config.scenario import Scenario, clock_time
from ..whatif.interval_staffing import IntervalPlan, PlanCheck
from ..whatif.store import atomic_write
from ..whatif.summary import Estimate
from ..whatif.errors import StudyError
from ..whatif.forecast import capped, rostered
from ..whatif.interval_chart import plot_interval_chart
from ..whatif.targets import Target
from .common import console, escape, print_json, warn


def interval_table(rows: Sequence[Mapping[str, float]], roles: Sequence[str], title: str, opens_at: str = "00:00") -> Table:
    """The compact per-interval table of one run (headline queue service level and ASA; on-shift
    headcount and occupancy per staffed role, joined by slashes), intervals at clock times."""
    initials = "/".join(r[0] for r in roles)
    table = Table(title=title, title_justify="left")
    for header in ("time", "offered", "answered", "aband", "SL", "ASA", f"staff {initials}", f"occ% {initials}"):
        table.add_column(header, justify="left" if header == "time" else "right", no_wrap=True)
    for row in rows:
        table.add_row(
            clock_time(row["start_minute"], opens_at), str(int(row["offered"])), str(int(row["answered_queue"])), str(int(row["abandoned"])),
            _two(row["service_level"]), "–" if math.isnan(row["asa_minutes"]) else f"{row['asa_minutes']:.1f}",
            "/".join(f"{row[f'headcount_{r}']:.3g}" for r in roles), "/".join(_percent(row[f"occupancy_{r}"]) for r in roles),
        )
    return table


def _two(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def _percent(value: float) -> str:
    return "–" if math.isnan(value) else f"{100 * value:.0f}"


def short_estimate(estimate: Estimate) -> str:
    """``0.76 [0.70, 0.82]``: the CI as its ends (a clipped CI of a share is not symmetric)."""
    if math.isnan(estimate.mean):
        return "–"
    if math.isnan(estimate.low):
        return f"{estimate.mean:.2f}"
    return f"{estimate.mean:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


#: What the verdict marks in interval tables mean (printed under them).
VERDICT_LEGEND = ("below: the whole 95% CI lies under the target; ?: undecided, the CI still straddles the target "
                  "after the replications shown (the check doubles them up to --max-replications)")


def verdict_cell(text: str, verdict: str) -> str:
    """A table cell marked with its interval verdict: below in red, undecided (?) in yellow."""
    return {"below": f"[red]{text} below[/]", "undecided": f"[yellow]{text} ?[/]"}.get(verdict, text)


def plan_table(plan: IntervalPlan) -> Table:
    """Per interval: offered, SIPP and planned headcount per role, and each plan's simulated SL."""
    verdicts = {"SIPP": plan.verdicts(plan.sipp_check), "plan": plan.verdicts(plan.iterative_check)}
    table = Table(
        title=f"{plan.scenario} · policy={plan.policy} · target service level >= {plan.target:g} within "
        f"{plan.threshold_minutes:g} min per {plan.interval_minutes}-min interval · mean [95% CI] over "
        f"{plan.sipp_check.replications} (SIPP) and {plan.iterative_check.replications} (plan) replications",
        title_justify="left",
    )
    table.add_column("interval")
    table.add_column("offered", justify="right")
    for role in plan.roles:
        table.add_column(f"{role} SIPP", justify="right")
        table.add_column(f"{role} plan", justify="right")
    table.add_column("SL with SIPP", justify="right", no_wrap=True)
    table.add_column("SL plan", justify="right", no_wrap=True)
    for k, start in enumerate(plan.starts):
        offered = plan.iterative_check.intervals[k]["offered"].mean
        cells = [clock_time(start, plan.opens_at), f"{offered:.1f}"]
        for role in plan.roles:
            cells += [str(plan.sipp[role][k]), f"{plan.headcounts(role)[k]:g}"]
        for name, check in (("SIPP", plan.sipp_check), ("plan", plan.iterative_check)):
            text = " / ".join(short_estimate(check.service_level(role)[k]) for role in plan.roles)
            cells.append(verdict_cell(text, verdicts[name][k]))
        table.add_row(*cells)
    return table


def plan_summary(plan: IntervalPlan) -> list[str]:
    """One line per plan: staff-hours, the intervals below the target and those still undecided."""
    lines = []
    iterative = {role: plan.headcounts(role) for role in plan.roles}
    sipp = "SIPP (" + ", ".join(f"{plan.mean_service[r]:.4g}-min handle time" for r in plan.roles) + ")"
    for name, counts, check in ((sipp, plan.sipp, plan.sipp_check), ("plan", iterative, plan.iterative_check)):
        hours = _hours(counts, plan.interval_minutes)
        missed, open_ = plan.misses(check), plan.undecided(check)
        where = ", ".join(clock_time(plan.starts[k], plan.opens_at) for k in missed) if missed else "none"
        line = f"{name}: {hours:g} staff-hours; intervals below target: {where}"
        if open_:
            line += (f"; undecided after {check.replications} replications (CI straddles the target): "
                     + ", ".join(clock_time(plan.starts[k], plan.opens_at) for k in open_))
        lines.append(line)
    return lines


def _hours(plan: Mapping[str, Sequence[float]], width: int) -> float:
    return sum(sum(c) for c in plan.values()) * width / 60.0


def plan_rows(plan: IntervalPlan) -> list[dict[str, Any]]:
    """The requirements file: one row per interval and role (``csr-marl schedule --requirements``)."""
    rows = []
    for k, start in enumerate(plan.starts):
        for role in plan.roles:
            rows.append({
                "start_minute": start, "end_minute": start + plan.interval_minutes, "role": role,
                "offered": round(plan.iterative_check.intervals[k]["offered"].mean, 3),
                "sipp": plan.sipp[role][k], "iterative": plan.requirements()[role][k],
                "service_level_sipp": _round(plan.sipp_check.service_level(role)[k].mean),
                "service_level_iterative": _round(plan.iterative_check.service_level(role)[k].mean),
                "start_time": clock_time(start, plan.opens_at), "iterative_mean": plan.headcounts(role)[k],
            })
    return rows


def _round(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as CSV atomically (a NaN or None is an empty cell)."""
    return atomic_write(Path(path), csv_text(rows))


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as CSV text, a header first (a NaN or None is an empty cell)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else v for k, v in row.items()})
    return buffer.getvalue()


def check_estimates_payload(check: PlanCheck, names: Sequence[str]) -> list[dict[str, Any]]:
    """Interval estimates as strict-JSON-ready dicts ``{name: {mean, low, high, n}}`` (NaN as None)."""
    return [
        {name: {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row[name]._asdict().items()}
         for name in names if name in row}
        for row in check.intervals
    ]


def staffed_roles(rows: Sequence[Mapping[str, float]]) -> list[str]:
    """Roles with anybody on shift in some interval."""
    return [r for r in ROLES if any(row.get(f"headcount_{r}", 0) for row in rows)]


def interval_target(targets: Sequence[Target]) -> float:
    """The one ``service_level>=X`` target an interval plan meets in every interval."""
    if len(targets) != 1 or targets[0].kpi != "service_level" or not targets[0].higher_is_better:
        raise StudyError('staffing by interval takes one target, --target "service_level>=0.8" (met in every interval)')
    return targets[0].threshold


def plan_chart(plan: IntervalPlan, path: Path) -> Path:
    """The interval chart of both plans: offered vs capacity, service level vs target."""
    offered = [row["offered_queue"].mean for row in plan.iterative_check.intervals]
    role = plan.roles[0] if "resolver" not in plan.roles else "resolver"
    per_contact = plan.mean_service[role]
    capacity = {
        name: [n * plan.interval_minutes / per_contact for n in counts[role]]
        for name, counts in (("SIPP", plan.sipp), ("plan", {role: plan.headcounts(role)}))
    }
    levels = {"SIPP": plan.sipp_check.service_level(role), "plan": plan.iterative_check.service_level(role)}
    title = (f"{plan.scenario} · {role}s · target {plan.target:g} within {plan.threshold_minutes:g} min · "
             f"mean and 95% CI over {plan.iterative_check.replications} replications")
    return plot_interval_chart(path, plan.starts, plan.interval_minutes, offered, capacity, levels, plan.target,
                               title=title, service_label=f"service level, {role} queue", opens_at=plan.opens_at)


def plan_payload(plan: IntervalPlan) -> dict[str, Any]:
    """The plan as strict JSON: both plans, their interval estimates and the intervals that miss."""
    names = ["offered", *(f"service_level_{r}" for r in plan.roles), *(f"occupancy_{r}" for r in plan.roles)]
    return {
        "scenario": plan.scenario, "policy": plan.policy, "seed": plan.seed, "target_service_level": plan.target,
        "threshold_minutes": plan.threshold_minutes, "interval_minutes": plan.interval_minutes,
        "starts": plan.starts, "roles": plan.roles, "mean_service_minutes": plan.mean_service,
        "sipp": plan.sipp, "iterative": plan.iterative, "iterations": plan.iterations, "converged": plan.converged,
        "sipp_misses": plan.sipp_misses, "iterative_misses": plan.iterative_misses,
        "sipp_verdicts": plan.verdicts(plan.sipp_check), "iterative_verdicts": plan.verdicts(plan.iterative_check),
        "sipp_replications": plan.sipp_check.replications, "iterative_replications": plan.iterative_check.replications,
        "sipp_check": check_estimates_payload(plan.sipp_check, names),
        "iterative_check": check_estimates_payload(plan.iterative_check, names),
        "notes": plan.notes,
    }


def floor_and_roster(plan: IntervalPlan, role: str, which: str, shrinkage: float = 0.0,
                     max_occupancy: float | None = None) -> tuple[list[int], list[int]]:
    """A plan's whole headcount per interval on the floor (raised to load / ``max_occupancy``) and on
    the roster (on floor / (1 - ``shrinkage``))."""
    loads = [row[f"offered_{role}"].mean * plan.mean_service[role] / plan.interval_minutes
             for row in plan.iterative_check.intervals]
    floor = [int(n) for n in capped(plan.requirements(which)[role], loads, max_occupancy)]
    return floor, [rostered(n, shrinkage) for n in floor]


def show_plan(plan: IntervalPlan, as_json: bool, out: Path | None, plot: Path | None, shrinkage: float = 0.0,
              max_occupancy: float | None = None) -> None:
    """Print the plan (table or JSON) and write the requirements CSV and the chart when asked."""
    written = []
    staffed = {(role, which): floor_and_roster(plan, role, which, shrinkage, max_occupancy)
               for role in plan.roles for which in ("sipp", "iterative")}
    if out is not None:
        rows = plan_rows(plan)
        for row, (k, role) in zip(rows, ((k, r) for k in range(len(plan.starts)) for r in plan.roles)):
            for which in ("sipp", "iterative"):
                floor, roster = staffed[(role, which)]
                row.update({which: floor[k], f"{which}_rostered": roster[k]})
        written.append(str(write_csv(out, rows)))
    if plot is not None:
        try:
            written.append(str(plan_chart(plan, plot)))
        except RuntimeError as exc:  # matplotlib missing
            warn(str(exc))
    if as_json:
        print_json({**plan_payload(plan), "shrinkage": shrinkage, "max_occupancy": max_occupancy,
                    "on_floor": {f"{r}_{w}": v[0] for (r, w), v in staffed.items()},
                    "rostered": {f"{r}_{w}": v[1] for (r, w), v in staffed.items()}})
        return
    console.print(plan_table(plan))
    console.print(f"[dim]{VERDICT_LEGEND}[/]", highlight=False)
    for line in plan_summary(plan):
        console.print(escape(line), highlight=False)
    if shrinkage or max_occupancy:
        for (role, which), (floor, roster) in staffed.items():
            console.print(escape(f"{role} {which}: on floor {floor}; rostered {roster} (shrinkage {shrinkage:.0%}"
                                 + (f", occupancy <= {max_occupancy:.0%})" if max_occupancy else ")")), highlight=False)
    for note in plan.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if written:
        console.print(f"[dim]wrote {escape(', '.join(written))}[/]", highlight=False, soft_wrap=True)


def scenario_yaml(scenario: Scenario, name: str, comments: Sequence[str] = ()) -> str:
    """The scenario as YAML (``comments`` on top), its ticket bank named relative to the scenarios
    folder when it lies there, so the file loads from anywhere."""
    dump: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=True)
    dump["name"] = name
    bank = Path(scenario.tickets.bank)
    try:
        dump.setdefault("tickets", {})["bank"] = bank.resolve().relative_to(scenarios_dir().resolve()).as_posix()
    except ValueError:
        dump.setdefault("tickets", {})["bank"] = str(bank)
    header = "".join(f"# {' '.join(str(line).splitlines())}\n" for line in comments)  # a comment stays one line
    return header + yaml.safe_dump(dump, sort_keys=False, default_flow_style=None)
