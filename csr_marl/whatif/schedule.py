"""Shift schedules from per-interval requirements, with OR-Tools CP-SAT (extra ``csr-marl[analyst]``).

    templates = shift_templates(starts=range(0, 241, 30), lengths=[240, 480], breaks={480: 30}, width=30)
    schedule = solve_schedule({"resolver": [5, 6, 10, ...]}, templates, width=30)
    schedule.coverage["resolver"]      # staff on the floor per interval (breaks taken out)

A *shift template* is a start minute and a paid length, with an optional break (a whole number of
intervals, placed by the solver within an hour of the shift's middle). The solver chooses how many
staff work each template with each break position:

- ``mode="cover"``: the least paid staff-hours whose coverage meets the requirement in every interval;
- ``mode="budget"``: at most ``budget`` staff per role; the least total shortfall (staff-intervals
  below the requirement), then the smallest shortfall in the worst interval, then the least paid hours.

Roles are scheduled independently. The coverage becomes the scenario's ``staffing.shifts`` (a
headcount change at each interval edge where it moves), ready to simulate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..config.scenario import MAX_HEADCOUNT, clock_time
from .csv_rows import csv_rows
from .errors import StudyError

BREAK_WINDOW_MINUTES = 60  # a break starts within this many minutes of the shift's middle
SOLVER_SECONDS = 20.0
MAX_REQUIREMENT_ROWS = 100_000  # a requirements file's rows: roles x intervals of a day


@dataclass(frozen=True)
class ShiftTemplate:
    start: float
    length: float
    break_minutes: float = 0.0

    def break_starts(self, width: float) -> list[float | None]:
        """Where the break may start (interval edges within an hour of the middle); ``[None]``: no break."""
        if not self.break_minutes:
            return [None]
        middle = self.start + self.length / 2 - self.break_minutes / 2
        first = self.start + width  # never in the first or last interval of the shift
        last = self.start + self.length - self.break_minutes - width
        options = [
            self.start + k * width for k in range(int(self.length // width))
            if first <= self.start + k * width <= last and abs(self.start + k * width - middle) <= BREAK_WINDOW_MINUTES
        ]
        return options or [None]


@dataclass(frozen=True)
class ShiftAssignment:
    role: str
    start: float
    length: float
    break_start: float | None
    break_minutes: float
    count: int


@dataclass(frozen=True)
class Schedule:
    mode: str
    width: float
    starts: list[float]
    requirements: dict[str, list[int]]
    coverage: dict[str, list[int]]
    assignments: list[ShiftAssignment]
    status: str  # OPTIMAL or FEASIBLE (time limit reached with a solution)

    def paid_hours(self, role: str | None = None) -> float:
        return sum(a.count * a.length for a in self.assignments if role in (None, a.role)) / 60.0

    def shortfall(self, role: str) -> int:
        return sum(max(0, r - c) for r, c in zip(self.requirements[role], self.coverage[role]))

    def headcount(self, role: str) -> int:
        return sum(a.count for a in self.assignments if a.role == role)


def shift_templates(
    starts: Iterable[float], lengths: Iterable[float], breaks: Mapping[float, float] | None, width: float,
    horizon: float,
) -> list[ShiftTemplate]:
    """Every start x length that fits in the day, each with its break; :class:`StudyError` for bad input."""
    breaks = {_minute(k, "--break"): _minute(v, "--break") for k, v in (breaks or {}).items()}
    starts = sorted({_minute(s, "--starts") for s in starts})
    lengths = sorted({_minute(n, "--lengths") for n in lengths})
    if not starts or not lengths:
        raise StudyError("give at least one shift start (--starts) and one shift length (--lengths)")
    for name, values in (("--starts", starts), ("--lengths", lengths), ("--break", [*breaks, *breaks.values()])):
        for value in values:
            if value < 0 or not math.isclose(value / width, round(value / width)):
                raise StudyError(f"{name} {value:g}: use whole multiples of the {width:g}-minute interval")
    for length, minutes in breaks.items():
        if length not in lengths:
            raise StudyError(f"--break {length:g}:{minutes:g}: no shift is {length:g} minutes long (--lengths)")
        if not 0 < minutes < length:
            raise StudyError(f"--break {length:g}:{minutes:g}: the break must be shorter than the shift")
    if min(lengths) <= 0:
        raise StudyError("--lengths: a shift lasts at least one interval")
    templates = [
        ShiftTemplate(s, n, breaks.get(n, 0.0)) for s in starts for n in lengths if s + n <= horizon + 1e-9
    ]
    if not templates:
        raise StudyError(f"no shift template fits in the {horizon:g}-minute day: start earlier or work shorter shifts")
    return templates


def _minute(value: Any, option: str) -> float:
    """A template minute: a finite number (not a list, a text or infinity), else :class:`StudyError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StudyError(f"{option} {str(value)[:60]!r}: expected minutes, a finite number")
    return float(value)


def solve_schedule(
    requirements: Mapping[str, Sequence[int]],
    templates: Sequence[ShiftTemplate],
    width: float,
    *,
    mode: str = "cover",
    budget: int | None = None,
    seconds: float = SOLVER_SECONDS,
) -> Schedule:
    """Staff per template (and break position) per role; see the module docstring."""
    cp_model = _cp_model()
    if mode not in ("cover", "budget"):
        raise StudyError(f"mode {mode!r}: use cover or budget")
    if mode == "budget" and (budget is None or budget < 0):
        raise StudyError("--budget: give the most staff per role the schedule may use (0 or more)")
    n = len(next(iter(requirements.values())))
    starts = [k * width for k in range(n)]
    coverage: dict[str, list[int]] = {}
    assignments: list[ShiftAssignment] = []
    statuses = []
    for role, need in requirements.items():
        if mode == "cover":
            uncovered = [k for k in range(n) if need[k] > 0 and not any(_covers(t, b, k * width, width) for t in templates for b in t.break_starts(width))]
            if uncovered:
                raise StudyError(
                    f"{role}: no shift template covers the interval at minute {starts[uncovered[0]]:g}, which needs "
                    f"{need[uncovered[0]]}; add --starts or --lengths that reach it (or use --budget)"
                )
        model = cp_model.CpModel()
        top = max(max(need, default=0), budget or 0)
        options = [(t, b) for t in templates for b in t.break_starts(width)]
        x = [model.new_int_var(0, top, f"x{i}") for i in range(len(options))]
        covered = [sum(x[i] for i, (t, b) in enumerate(options) if _covers(t, b, k * width, width)) for k in range(n)]
        cost = sum(int(t.length) * x[i] for i, (t, _) in enumerate(options))
        if mode == "cover":
            for k in range(n):
                model.add(covered[k] >= int(need[k]))
            model.minimize(cost)
        else:
            model.add(sum(x) <= int(budget or 0))
            short = [model.new_int_var(0, int(need[k]), f"s{k}") for k in range(n)]
            for k in range(n):
                model.add(short[k] >= int(need[k]) - covered[k])
            worst = model.new_int_var(0, max(need, default=0), "worst")
            for k in range(n):
                model.add(worst >= short[k])
            # Least total shortfall first, then the smallest worst interval, then the least paid time.
            paid_ceiling = int(sum(t.length for t, _ in options) * top) + 1
            model.minimize(sum(short) * paid_ceiling * (n + 1) + worst * paid_ceiling + cost)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = seconds
        solver.parameters.num_workers = 1  # deterministic: the same requirement gives the same schedule
        solver.parameters.random_seed = 0
        status = solver.solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise StudyError(f"{role}: the solver found no schedule ({solver.status_name(status)})")
        statuses.append(solver.status_name(status))
        counts = [int(solver.value(v)) for v in x]
        coverage[role] = [sum(c for c, (t, b) in zip(counts, options) if _covers(t, b, k * width, width)) for k in range(n)]
        assignments += [
            ShiftAssignment(role, t.start, t.length, b, t.break_minutes if b is not None else 0.0, c)
            for c, (t, b) in zip(counts, options) if c
        ]
    status = "OPTIMAL" if all(s == "OPTIMAL" for s in statuses) else "FEASIBLE"
    return Schedule(mode, width, starts, {r: [int(v) for v in need] for r, need in requirements.items()}, coverage,
                    assignments, status)


def _covers(template: ShiftTemplate, break_start: float | None, interval_start: float, width: float) -> bool:
    """Whether a staff member on ``template`` (break at ``break_start``) is on the floor in the interval."""
    if not template.start <= interval_start < template.start + template.length - 1e-9:
        return False
    if break_start is not None and break_start <= interval_start < break_start + template.break_minutes - 1e-9:
        return False
    # A shift that ends mid-interval covers it only if it covers all of it.
    return interval_start + width <= template.start + template.length + 1e-9


def _cp_model():
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise StudyError("schedules need OR-Tools: pip install 'csr-marl[analyst]'") from None
    return cp_model


def read_requirements(path: str | Path, column: str, starts: Sequence[float]) -> dict[str, list[int]]:
    """Requirements per role per interval from a CSV with ``start_minute``, ``role`` and ``column``
    (what ``csr-marl staff --by-interval --out`` writes); every interval of the day must be there."""
    file = Path(path)
    if not file.is_file():
        raise StudyError(f"--requirements {file}: file not found")
    label = f"--requirements {file.name}"
    table: dict[str, dict[float, int]] = {}
    for line, row in csv_rows(file, label, ("start_minute", "role", column), f"need start_minute, role, {column}", MAX_REQUIREMENT_ROWS):
        try:
            start, value = float(row["start_minute"]), float(row[column])
        except (TypeError, ValueError):
            raise StudyError(f"{label} line {line}: start_minute and {column} must be numbers") from None
        if not (math.isfinite(start) and 0 <= value <= MAX_HEADCOUNT):
            raise StudyError(f"{label} line {line}: {column} must be 0 to {MAX_HEADCOUNT} staff "
                             f"and start_minute finite, got {row[column][:20]!r} at {row['start_minute'][:20]!r}")
        table.setdefault(row["role"], {})[start] = int(value)
    if not table:
        raise StudyError(f"--requirements {file.name}: no rows")
    out: dict[str, list[int]] = {}
    for role, by_start in table.items():
        absent = [s for s in starts if s not in by_start]
        if absent:
            raise StudyError(f"--requirements {file.name}: role {role} has no row for the interval at minute {absent[0]:g}")
        out[role] = [by_start[s] for s in starts]
    return out


def schedule_rows(schedule: Schedule, opens_at: str = "00:00") -> list[dict[str, Any]]:
    """One row per shift worked: role, start, end (minutes and clock times of a day opening at
    ``opens_at``), length, break, staff count (the schedule CSV)."""
    return [
        {"role": a.role, "start_minute": a.start, "end_minute": a.start + a.length,
         "start_time": clock_time(a.start, opens_at), "end_time": clock_time(a.start + a.length, opens_at),
         "paid_minutes": a.length,
         "break_start_minute": "" if a.break_start is None else a.break_start,
         "break_minutes": a.break_minutes, "staff": a.count}
        for a in sorted(schedule.assignments, key=lambda a: (a.role, a.start, a.length, a.break_start or 0))
    ]
