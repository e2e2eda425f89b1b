"""The analytic starting point of a staffing search: measured load per role, sized with Erlang A/C.

A short pilot simulation measures each role's *offered* load in Erlangs (mean busy time per service x
entries into the role's queue, per minute: the KPI ``offered_load_<role>``). The carried load (busy
staff-minutes per minute) would not do: it is capped by the pilot's headcount and shrinks by the share
of customers who hang up, so a pilot far below the answer would start the search far too low. The busiest period of the arrival profile scales it to peak load, and Erlang A
(Erlang C without patience) gives the least headcount meeting the targets the formulas can speak to:
service level, P(wait) and ASA for the role customers reach first, abandonment for every role, occupancy
for its own role. It is only a start: the simulation decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..analysis import erlang_a, square_root_staffing
from ..config.loading import read_trace
from ..config.scenario import Scenario
from .targets import Target

#: Targets an Erlang model of the role customers reach first can evaluate, and the result field each maps to.
_FRONT_KPIS = {"service_level": "service_level", "p_wait": "p_wait", "asa_minutes": "asa_served"}
#: The direction in which each KPI the formulas use gets better with more staff.
_HIGHER_IS_BETTER = {"service_level": True, "p_wait": False, "asa_minutes": False, "abandonment_rate": False}
_MAX_ESTIMATE = 100_000


@dataclass(frozen=True)
class ErlangEstimate:
    """A role's measured load and the Erlang headcount for it."""

    role: str
    mean_load: float  # Erlangs over the measured window
    peak_load: float  # Erlangs in the busiest arrival period
    handle_minutes: float  # staff-minutes of this role per offered contact
    headcount: int
    basis: str  # which targets the formula used

    def __str__(self) -> str:
        return f"{self.headcount} ({self.basis}; peak load {self.peak_load:.2f} Erlangs)"


def arrival_rates(scenario: Scenario) -> tuple[float, float]:
    """Mean and peak arrival rate (per minute) over the measured window (after the warm-up)."""
    start, end = scenario.warmup_minutes, scenario.horizon_minutes
    arrivals = scenario.arrivals
    if arrivals.trace is not None:
        times = [t for t in read_trace(arrivals.trace) if start <= t < end]
        mean = len(times) / (end - start)
        return mean, max(mean, _busiest_hour(times, start, end))
    pieces = [
        (min(b, end) - max(a, start), rate / 60.0)
        for a, b, rate in arrivals.segments(end)
        if b > start
    ]
    mean = sum(length * value for length, value in pieces) / (end - start)
    return mean, max(value for _, value in pieces)


def _busiest_hour(times: Sequence[float], start: float, end: float) -> float:
    width = min(60.0, end - start)
    counts = [sum(1 for t in times if a <= t < a + width) for a in range(int(start), int(end - width) + 1, 15)]
    return max(counts, default=0) / width


def estimate_headcount(
    scenario: Scenario,
    role: str,
    mean_load: float,
    targets: Sequence[Target],
    front_role: str,
) -> ErlangEstimate:
    """Erlang headcount for ``role`` given its measured mean load (Erlangs) in ``scenario``."""
    mean_rate, peak_rate = arrival_rates(scenario)
    peak_load = mean_load * (peak_rate / mean_rate if mean_rate > 0 else 1.0)
    handle = mean_load / mean_rate if mean_rate > 0 else 0.0
    if peak_load <= 0 or handle <= 0:
        return ErlangEstimate(role, mean_load, 0.0, handle, 0, "no load measured")
    patience = scenario.customers.patience
    mean_patience = patience.mean if patience is not None else math.inf
    threshold = scenario.service_level.threshold_minutes
    usable = [
        t for t in targets
        if ((role == front_role and t.kpi in _FRONT_KPIS) or t.kpi == "abandonment_rate")
        and t.higher_is_better == _HIGHER_IS_BETTER[t.kpi]
        or t.kpi == f"occupancy_{role}" and not t.higher_is_better
    ]
    if not usable:
        count = square_root_staffing(peak_load, 1.0)
        return ErlangEstimate(role, mean_load, peak_load, handle, count, "square-root staffing, beta = 1")

    def meets(c: int) -> bool:
        if math.isinf(mean_patience) and c <= peak_load:
            return False
        result = erlang_a(c, peak_rate, handle, mean_patience, threshold)
        values = {
            "abandonment_rate": result.p_abandon,
            f"occupancy_{role}": result.occupancy,
            **{kpi: getattr(result, field) for kpi, field in _FRONT_KPIS.items()},
        }
        return all(t.satisfied(values[t.kpi]) for t in usable)

    count = max(1, math.floor(peak_load * 0.5))
    while not meets(count) and count < _MAX_ESTIMATE:
        count += 1
    basis = "Erlang " + ("A" if math.isfinite(mean_patience) else "C") + " for " + ", ".join(str(t) for t in usable)
    return ErlangEstimate(role, mean_load, peak_load, handle, count, basis)


def measured_loads(records: Sequence[Mapping[str, float]], roles: Sequence[str]) -> dict[str, float]:
    """Mean offered load per role (Erlangs) over pilot replications (``offered_load_<role>``)."""
    loads = {}
    for role in roles:
        values = [r[f"offered_load_{role}"] for r in records if not math.isnan(r[f"offered_load_{role}"])]
        loads[role] = sum(values) / len(values) if values else 0.0
    return loads
