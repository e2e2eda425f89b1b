"""A forecast in: per-interval volume and handle time -> agents per interval, Erlang beside simulation.

The forecast CSV has one row per interval (and queue): ``interval`` (its start, ``HH:MM`` or a minute
of the day), ``volume`` (contacts offered in it), ``aht_seconds`` (or ``aht_minutes``), and optionally
``queue``. Intervals are consecutive and equally wide (15, 30 or 60 minutes).

    forecast = read_forecast("forecast.csv")
    rows = erlang_requirements(forecast["resolver"], 0.8, 20, shrinkage=0.3, max_occupancy=0.85)
    scenario = forecast_scenario(forecast["resolver"], within_seconds=20)   # simulate it, staff it by interval

Each interval is sized by Erlang C (Erlang A with ``patience_seconds``) on its own volume and handle
time, as a workforce tool does. :func:`forecast_scenario` turns the forecast into a scenario (one FIFO
queue, the arrival profile of the volumes, exponential handle times at the volume-weighted mean AHT),
so the interval planner can size it by simulation and ``csr-marl schedule`` can take it.

*On the floor* is the headcount answering contacts; *rostered* is what the roster must hold with
shrinkage (breaks, training, absence): ``ceil(on_floor / (1 - shrinkage))``. The occupancy cap raises
the floor headcount to at least ``load / max_occupancy``.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config.loading import load_scenario
from ..config.scenario import Scenario, clock_minutes, clock_time
from .erlang_table import erlang_table
from .errors import StudyError

WIDTHS = (15, 30, 60)


@dataclass(frozen=True)
class ForecastInterval:
    queue: str
    start_minute: float  # minutes after the first interval's start
    volume: float
    aht_seconds: float


@dataclass(frozen=True)
class Forecast:
    """One queue's intervals, their width and the clock time of the first."""

    queue: str
    intervals: list[ForecastInterval]
    width: int
    opens_at: str

    @property
    def weighted_aht_seconds(self) -> float:
        volume = sum(i.volume for i in self.intervals)
        return sum(i.volume * i.aht_seconds for i in self.intervals) / volume if volume else 0.0


@dataclass(frozen=True)
class ErlangRequirement:
    start_minute: float
    volume: float
    aht_seconds: float
    load: float  # Erlangs
    on_floor: int
    rostered: int


def read_forecast(path: str | Path) -> dict[str, Forecast]:
    """The forecast per queue; :class:`StudyError` names the first bad line."""
    file = Path(path)
    if not file.is_file():
        raise StudyError(f"{file}: file not found")
    with file.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        aht = next((c for c in ("aht_seconds", "aht_minutes") if c in fields), None)
        missing = [c for c in ("interval", "volume") if c not in fields] + ([] if aht else ["aht_seconds"])
        if missing:
            raise StudyError(f"{file.name}: no column {', '.join(missing)} (need interval, volume, aht_seconds or aht_minutes; optional queue)")
        rows = list(reader)
    if not rows:
        raise StudyError(f"{file.name}: no intervals")
    parsed: dict[str, list[tuple[int, float, float]]] = {}
    for line, row in enumerate(rows, start=2):
        where = f"{file.name} line {line}"
        start = _start(row["interval"], where)
        volume = _number(row["volume"], where, "volume", zero=True)
        seconds = _number(row[aht], where, aht) * (60.0 if aht == "aht_minutes" else 1.0)
        parsed.setdefault((row.get("queue") or "resolver").strip(), []).append((start, volume, seconds))
    return {queue: _forecast(queue, entries, file.name) for queue, entries in parsed.items()}


def _start(text: str, where: str) -> int:
    text = (text or "").strip()
    if ":" in text:
        hours, _, minutes = text.partition(":")
        if hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60 and len(minutes) == 2:
            return clock_minutes(text)
    elif text.isdigit():
        return int(text)
    raise StudyError(f"{where}: interval {text!r} is not a clock time HH:MM or a whole minute")


def _number(text: str, where: str, column: str, zero: bool = False) -> float:
    try:
        value = float((text or "").strip())
    except ValueError:
        raise StudyError(f"{where}: {column} {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise StudyError(f"{where}: {column} must be {'>= 0' if zero else '> 0'}, got {text.strip()!r}")
    return value


def _forecast(queue: str, entries: list[tuple[int, float, float]], name: str) -> Forecast:
    entries.sort()
    starts = [start for start, _, _ in entries]
    width = starts[1] - starts[0] if len(starts) > 1 else 30
    if width not in WIDTHS or any(b - a != width for a, b in zip(starts, starts[1:])):
        raise StudyError(f"{name}: queue {queue}: intervals must be consecutive and {', '.join(map(str, WIDTHS))} minutes wide "
                         f"(starts {', '.join(clock_time(s) for s in starts[:4])}{', ...' if len(starts) > 4 else ''})")
    first = starts[0]
    intervals = [ForecastInterval(queue, float(s - first), v, a) for s, v, a in entries]
    return Forecast(queue, intervals, width, clock_time(first))


def erlang_requirements(
    forecast: Forecast, target: float, within_seconds: float, *, patience_seconds: float | None = None,
    shrinkage: float = 0.0, max_occupancy: float | None = None,
) -> list[ErlangRequirement]:
    """Each interval sized on its own: Erlang C (A with patience), the occupancy cap, then shrinkage."""
    out = []
    for i in forecast.intervals:
        if i.volume == 0:
            out.append(ErlangRequirement(i.start_minute, 0.0, i.aht_seconds, 0.0, 0, 0))
            continue
        table = erlang_table(i.volume, forecast.width, i.aht_seconds, target, within_seconds,
                             patience_seconds=patience_seconds, shrinkage=shrinkage, max_occupancy=max_occupancy)
        out.append(ErlangRequirement(i.start_minute, i.volume, i.aht_seconds, table.offered_load,
                                     table.required_agents, table.scheduled_agents))
    return out


def forecast_scenario(forecast: Forecast, within_seconds: float, *, patience_seconds: float | None = None,
                      base: str | Scenario = "validation/mmc", overrides: Mapping[str, Any] | None = None) -> Scenario:
    """A scenario that simulates the forecast: one FIFO queue of resolvers (see the module docstring)."""
    width = forecast.width
    profile = [[i.start_minute, round(i.volume * 60.0 / width, 4)] for i in forecast.intervals]
    if not any(rate for _, rate in profile):
        raise StudyError(f"queue {forecast.queue}: every interval's volume is 0, nothing to staff")
    peak = max(i.volume * i.aht_seconds for i in forecast.intervals) / (width * 60.0)
    settings: dict[str, Any] = {
        "name": f"forecast_{forecast.queue}", "opens_at": forecast.opens_at,
        "description": f"A forecast of queue {forecast.queue}: {len(forecast.intervals)} intervals of {width} minutes.",
        "horizon_minutes": width * len(forecast.intervals), "warmup_minutes": 0,
        "arrivals": {"profile": profile},
        "handle_times.tools.respond_user": {"dist": "exponential", "mean_minutes": round(forecast.weighted_aht_seconds / 60.0, 4)},
        "customers.patience": None if patience_seconds is None else {"dist": "exponential", "mean_minutes": patience_seconds / 60.0},
        "service_level.threshold_minutes": within_seconds / 60.0, "service_level.interval_minutes": width,
        "staffing.resolver": max(1, math.ceil(peak)),
        **(overrides or {}),
    }
    return load_scenario(base, settings)


def rostered(on_floor: float, shrinkage: float) -> int:
    """Heads the roster must hold for ``on_floor`` answering: ``ceil(on_floor / (1 - shrinkage))``."""
    if not 0.0 <= shrinkage < 1.0:
        raise StudyError(f"--shrinkage must lie in [0, 1), got {shrinkage:g}")
    return math.ceil(on_floor / (1.0 - shrinkage) - 1e-9)


def capped(on_floor: Sequence[float], loads: Sequence[float], max_occupancy: float | None) -> list[float]:
    """Raise each interval's floor headcount to at least ``load / max_occupancy`` (whole agents)."""
    if max_occupancy is None:
        return list(on_floor)
    if not 0.0 < max_occupancy <= 1.0:
        raise StudyError(f"--max-occupancy must lie in (0, 1], got {max_occupancy:g}")
    return [max(n, math.ceil(load / max_occupancy - 1e-9)) for n, load in zip(on_floor, loads)]
