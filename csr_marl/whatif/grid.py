"""``--vary FIELD=VALUES``: the axes of a sweep and the grid of every combination.

VALUES is an inclusive integer range ``3..10``, a stepped range ``0.5..2:0.5``, a comma list
``100,150,200`` (each item read as YAML), or a YAML list ``[{dist: exponential, mean_minutes: 2}, null]``.
"""

from __future__ import annotations

import itertools
import math
import re
import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import yaml

from ..config.loading import ScenarioError, load_scenario, parse_yaml
from ..config.scenario import Scenario
from .errors import StudyError

_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?)\s*(?::\s*(\d+(?:\.\d+)?))?\s*$")
_FIELD = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
MAX_VALUES = 1000
EXAMPLE = "e.g. staffing.resolver=3..10 or arrivals.rate_per_hour=100,150"


@dataclass(frozen=True)
class Axis:
    """One varied scenario field (a dotted override path) and the values it takes, in order."""

    field: str
    values: tuple[Any, ...]
    text: str = dataclasses.field(default="", compare=False)  # as the user wrote it

    def __str__(self) -> str:
        return self.text or f"{self.field}={','.join(format_value(v) for v in self.values)}"


def format_value(value: Any) -> str:
    """A grid value as a short label (flow-style YAML for sections)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)) or value is None:
        return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()
    return str(value)


def parse_vary(text: str) -> Axis:
    """Parse one ``--vary`` option; raises :class:`StudyError` naming what is malformed."""
    field, sep, spec = text.partition("=")
    field = field.strip()
    if not sep or not field or not spec.strip():
        raise StudyError(f"--vary {text!r}: expected FIELD=VALUES, {EXAMPLE}")
    if not _FIELD.match(field):
        raise StudyError(f"--vary {text!r}: {field!r} is not a dotted field path, {EXAMPLE}")
    values = _parse_values(spec, f"--vary {text!r}")
    if len(values) > MAX_VALUES:
        raise StudyError(f"--vary {text!r}: {len(values)} values, more than the {MAX_VALUES} allowed")
    labels = [format_value(v) for v in values]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise StudyError(f"--vary {text!r}: value {repeated[0]} is given twice")
    return Axis(field, tuple(values), f"{field}={spec.strip()}")


def parse_values(spec: str, where: str) -> list[Any]:
    """``3..10``, ``0.5..2:0.5``, ``100,150`` or a YAML list -> the values; :class:`StudyError` names ``where``."""
    return _parse_values(spec, where)


def _parse_values(spec: str, where: str) -> list[Any]:
    match = _RANGE.match(spec)
    if match:
        return _range(*match.groups(), where=where)
    if spec.lstrip().startswith("["):
        values = _yaml(spec, where)
        if not isinstance(values, list) or not values:
            raise StudyError(f"{where}: expected a non-empty YAML list")
        return values
    items = [item.strip() for item in spec.split(",")]
    if any(not item for item in items):
        raise StudyError(f"{where}: empty value in the list, {EXAMPLE}")
    return [_yaml(item, where) for item in items]


def _yaml(text: str, where: str) -> Any:
    """One value read by the bounded YAML loader (depth, aliases); a :class:`StudyError` names ``where``."""
    try:
        return parse_yaml(text, where)
    except ScenarioError as exc:
        raise StudyError(str(exc)) from None


def _range(start: str, stop: str, step: str | None, *, where: str) -> list[Any]:
    integers = all("." not in part for part in (start, stop, step or "1"))
    if integers:
        first, last, by = int(start), int(stop), int(step or 1)
    else:
        if step is None:
            raise StudyError(f"{where}: a decimal range needs a step, e.g. 0.5..2:0.5")
        first, last, by = float(start), float(stop), float(step)
    if by <= 0:
        raise StudyError(f"{where}: the step must be > 0")
    if first > last:
        raise StudyError(f"{where}: the range is empty ({start} > {stop})")
    count = math.floor((last - first) / by + 1e-9) + 1
    if count > MAX_VALUES:
        raise StudyError(f"{where}: {count} values, more than the {MAX_VALUES} allowed")
    if integers:
        return list(range(first, last + 1, by))
    return [round(first + i * by, 10) for i in range(count)]


#: Guards on a study's size, checked before any grid point is built: past them a typo such as
#: ``--vary a=1..1000 --vary b=1..1000`` would fill memory for minutes before printing anything.
MAX_POINTS = 10_000
MAX_RUNS = 1_000_000


def check_grid_size(axes: Sequence[Axis], replications: int) -> None:
    """Refuse a grid of more than :data:`MAX_POINTS` points or :data:`MAX_RUNS` replications in all."""
    points = math.prod(len(axis.values) for axis in axes)
    shape = " x ".join(str(len(axis.values)) for axis in axes)
    if points > MAX_POINTS:
        raise StudyError(f"the grid has {points:,} points ({shape}), more than the {MAX_POINTS:,} a study may hold; narrow the --vary values")
    if points * replications > MAX_RUNS:
        raise StudyError(
            f"{points:,} points x {replications:,} replications = {points * replications:,} runs, more than the "
            f"{MAX_RUNS:,} a study may hold; lower --replications or narrow the --vary values"
        )


def grid_points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """Every combination of the axes' values; the first axis varies slowest."""
    fields = [axis.field for axis in axes]
    return [dict(zip(fields, combo)) for combo in itertools.product(*(axis.values for axis in axes))]


def check_axes(axes: Sequence[Axis]) -> None:
    """Reject a field varied twice, or one nested inside another varied field."""
    fields = [axis.field for axis in axes]
    for i, field in enumerate(fields):
        for other in fields[:i]:
            if field == other:
                raise StudyError(f"--vary {field}: given twice")
            if field.startswith(other + ".") or other.startswith(field + "."):
                raise StudyError(f"--vary {field} and --vary {other}: one is inside the other")


def point_scenarios(base: Scenario, axes: Sequence[Axis]) -> list[Scenario]:
    """The validated scenario of every grid point (``base`` with the point's overrides applied).

    Each value is first checked on its own so that a bad field or value is reported against its
    ``--vary``; then every combination is built (some are only invalid together).
    """
    check_axes(axes)
    for axis in axes:
        for value in axis.values:
            try:
                load_scenario(base, {axis.field: value})
            except ScenarioError as exc:
                raise StudyError(f"--vary {axis}: {exc}") from None
    scenarios = []
    for point in grid_points(axes):
        try:
            scenarios.append(load_scenario(base, point))
        except ScenarioError as exc:
            label = ", ".join(f"{k}={format_value(v)}" for k, v in point.items())
            raise StudyError(f"grid point {label}: {exc}") from None
    return scenarios
