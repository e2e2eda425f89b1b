"""KPIs per interval of the day (15, 30 or 60 minutes): how a workforce manager reads a run.

A whole-day service level hides an understaffed peak behind an idle morning, so every run also keeps,
per interval of ``service_level.interval_minutes``:

- per queue (triage inbox, resolver queue, escalation queue), counted in the interval in which the
  contact *entered* the queue (first visit, as the whole-day KPIs): offered, answered, answered within
  the threshold, abandoned there, and the wait sum of answered contacts;
- per role: busy staff-minutes and minutes spent finishing a ticket after going off shift, split at
  interval edges; on-shift headcount comes from the staffing schedule when the table is made;
- contacts arriving (offered) and contacts whose customer hung up, by arrival interval.

The bookkeeping is a handful of list increments per event, so the core's hot path stays fast. Intervals
past :data:`MAX_INTERVALS` (very long ``max_tickets`` runs) pool into the last one, keeping memory flat.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ..config.domain import ROLES
from ..config.scenario import Staffing

MAX_INTERVALS: Final = 2_880  # 60 days of 30-minute intervals
QUEUE_NAMES: Final[tuple[str, ...]] = ("triage", "resolver", "escalation")
# Per-queue columns of :attr:`IntervalKpis.queues`, in this order.
_OFFERED: Final = 0
_ANSWERED: Final = 1
_IN_THRESHOLD: Final = 2
_ABANDONED: Final = 3
_WAIT_SUM: Final = 4


def interval_count(horizon_minutes: float, interval_minutes: float) -> int:
    """Intervals covering ``[0, horizon)`` (the last may be partial), at most :data:`MAX_INTERVALS`."""
    return max(1, min(MAX_INTERVALS, math.ceil(horizon_minutes / interval_minutes - 1e-9)))


class IntervalKpis:
    """Streaming per-interval counters (updated by :class:`~csr_marl.sim.kpis.KpiAccumulator`)."""

    def __init__(self, interval_minutes: float, horizon_minutes: float, threshold_minutes: float) -> None:
        self.width = float(interval_minutes)
        self.horizon = float(horizon_minutes)
        self.threshold = threshold_minutes
        self.n = interval_count(horizon_minutes, interval_minutes)
        self._last = self.n - 1
        self._per_minute = 1.0 / self.width
        n = self.n
        self.arrived = [0] * n
        self.abandoned = [0] * n
        self.queues = {queue: [[0.0] * n for _ in range(5)] for queue in QUEUE_NAMES}
        self._offered = {queue: columns[_OFFERED] for queue, columns in self.queues.items()}
        self.answered_columns = {
            queue: (columns[_ANSWERED], columns[_WAIT_SUM], columns[_IN_THRESHOLD]) for queue, columns in self.queues.items()
        }
        self.busy = {role: [0.0] * n for role in ROLES}
        self.overtime = {role: [0.0] * n for role in ROLES}

    def index(self, minute: float) -> int:
        """The interval holding ``minute``."""
        i = int(minute * self._per_minute)
        return i if i < self._last else self._last

    # --- events (called for counted contacts only; the index is worked out inline: a hot path) ---
    def contact_arrived(self, arrival: float) -> None:
        i = int(arrival * self._per_minute)
        self.arrived[i if i < self._last else self._last] += 1

    def contact_abandoned(self, arrival: float) -> None:
        i = int(arrival * self._per_minute)
        self.abandoned[i if i < self._last else self._last] += 1

    def entered(self, queue: str, at: float) -> None:
        i = int(at * self._per_minute)
        self._offered[queue][i if i < self._last else self._last] += 1

    def answered(self, queue: str, entered_at: float, wait: float) -> None:
        i = int(entered_at * self._per_minute)
        if i > self._last:
            i = self._last
        columns = self.queues[queue]
        columns[_ANSWERED][i] += 1
        columns[_WAIT_SUM][i] += wait
        if wait <= self.threshold:
            columns[_IN_THRESHOLD][i] += 1

    def gave_up(self, queue: str, entered_at: float) -> None:
        self.queues[queue][_ABANDONED][self.index(entered_at)] += 1

    def busy_span(self, role: str, start: float, until: float, off_shift: float = 0.0) -> None:
        """``role`` was busy from ``start`` to ``until``; ``off_shift`` of it after the shift ended
        (spread over the span in proportion, which is exact when the span lies in one interval)."""
        i, last = self.index(start), self.index(until)
        if i == last and not off_shift:  # the usual case: one service within one interval
            self.busy[role][i] += until - start
            return
        busy, extra = self.busy[role], self.overtime[role]
        share = off_shift / (until - start) if off_shift else 0.0
        while True:
            edge = (i + 1) * self.width if i < last else until
            part = min(edge, until) - start
            busy[i] += part
            if share:
                extra[i] += part * share
            if i >= last:
                return
            start, i = edge, i + 1

    # --- results ----------------------------------------------------------------------------------
    def table(self, staffing: Staffing, warmup: float, end: float, headline_queue: str) -> list[dict[str, int | float]]:
        """One flat row per interval: see :func:`interval_definitions` for each column."""
        rows = []
        for i in range(self.n):
            start = i * self.width
            stop = end if i == self._last else min(start + self.width, end)
            if stop <= start:
                break
            row: dict[str, int | float] = {"start_minute": start, "end_minute": stop, "offered": self.arrived[i],
                                     "abandoned": self.abandoned[i]}
            for queue, columns in self.queues.items():
                offered, answered, in_threshold = columns[_OFFERED][i], columns[_ANSWERED][i], columns[_IN_THRESHOLD][i]
                row[f"offered_{queue}"] = int(offered)
                row[f"answered_{queue}"] = int(answered)
                row[f"abandoned_{queue}"] = int(columns[_ABANDONED][i])
                row[f"service_level_{queue}"] = _ratio(in_threshold, offered)
                row[f"asa_minutes_{queue}"] = _ratio(columns[_WAIT_SUM][i], answered)
            # The headline queue's columns again under plain names (what a staffing study varies).
            for name, plain in (("offered", "offered_queue"), ("answered", "answered_queue"),
                                ("abandoned", "abandoned_queue"), ("service_level", "service_level"),
                                ("asa_minutes", "asa_minutes")):
                row[plain] = row[f"{name}_{headline_queue}"]
            counted_from = max(start, warmup)
            for role in ROLES:
                staffed = staffed_minutes(staffing, role, counted_from, stop)
                row[f"headcount_{role}"] = _ratio(staffed_minutes(staffing, role, start, stop), stop - start)
                occupancy = _ratio(self.busy[role][i], staffed + self.overtime[role][i])
                row[f"occupancy_{role}"] = min(occupancy, 1.0) if not math.isnan(occupancy) else occupancy
            rows.append(row)
        return rows


def staffed_minutes(staffing: Staffing, role: str, start: float, stop: float) -> float:
    """On-shift staff-minutes of ``role`` between ``start`` and ``stop`` under ``staffing``."""
    if stop <= start:
        return 0.0
    edges = (start, *staffing.changes_between(start, stop), stop)
    return sum(staffing.headcount_at(role, a) * (b - a) for a, b in zip(edges, edges[1:]))


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def interval_definitions(headline_queue: str | None = None, threshold_minutes: float | None = None) -> dict[str, str]:
    """One line per interval column (``<queue>`` is triage, resolver or escalation)."""
    within = "the scenario's threshold" if threshold_minutes is None else f"{threshold_minutes:g} min"
    head = f"the {headline_queue} queue" if headline_queue else "the headline queue"
    return {
        "start_minute": "interval start (minutes from the start of the day)",
        "offered": "contacts that arrived in the interval (after the warm-up)",
        "abandoned": "contacts that arrived in the interval and hung up, in any queue",
        "offered_queue": f"contacts that entered {head} in the interval (first visit)",
        "service_level": f"of the contacts that entered {head} in the interval, the share answered within {within}",
        "asa_minutes": f"mean wait in {head} of the interval's entrants that were answered",
        "offered_<queue>": "contacts entering that queue in the interval (first visit); answered_/abandoned_ likewise",
        "service_level_<queue>": f"answered within {within} / entered, for entrants of that queue in the interval",
        "headcount_<role>": "mean on-shift headcount over the interval (the staffing schedule)",
        "occupancy_<role>": "busy staff-minutes / on-shift staff-minutes in the interval (finishing a ticket off shift counts as on the floor)",
    }


def interval_rows_json(rows: list[dict[str, int | float]]) -> list[dict[str, Any]]:
    """Rows with NaN as None: strict JSON."""
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in rows]
