"""The analyst's Erlang staffing table for one interval, built on :mod:`csr_marl.analysis`.

Inputs are the planner's usual ones: contacts per interval, average handle time and the service-level
goal ("80% answered within 20 seconds"), optionally mean patience (then Erlang A, with abandonment),
shrinkage and an occupancy cap. Times are in seconds here; the formulas are unit-free.

Service level is P(an offered contact is answered within the threshold): with Erlang C every contact
is answered eventually, with Erlang A a contact that abandons counts as not answered in time.
ASA is the mean wait of answered contacts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..analysis._checks import check_load
from ..analysis import (
    erlang_a,
    erlang_c,
    erlang_c_asa,
    erlang_c_service_level,
    servers_for_erlang_a,
    servers_for_service_level,
)
from .errors import StudyError

SL_DEFINITION = "service level = P(an offered contact is answered within the threshold); ASA over answered contacts"


@dataclass(frozen=True)
class ErlangRow:
    agents: int
    p_wait: float
    asa_seconds: float
    service_level: float
    occupancy: float
    p_abandon: float | None  # only with patience (Erlang A)
    meets_service_level: bool
    within_occupancy: bool


@dataclass(frozen=True)
class ErlangTable:
    model: str  # "Erlang C" or "Erlang A"
    arrival_rate_per_second: float
    aht_seconds: float
    offered_load: float  # Erlangs
    target_sl: float
    within_seconds: float
    patience_seconds: float | None
    shrinkage: float
    max_occupancy: float | None
    agents_for_service_level: int
    required_agents: int  # also within the occupancy cap
    scheduled_agents: int  # required / (1 - shrinkage), rounded up
    rows: list[ErlangRow]


def _check(name: str, value: float, low: float, high: float, *, low_open: bool = True, high_open: bool = False) -> float:
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if math.isnan(value) or below or above:
        option = f"--{name.replace('_', '-')}"
        if math.isinf(high):
            raise StudyError(f"{option} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise StudyError(f"{option} must lie in {lo}{low:g}, {high:g}{hi}, got {value:g}")
    return value


def erlang_table(
    volume: float,
    interval_minutes: float,
    aht_seconds: float,
    target_sl: float,
    within_seconds: float,
    *,
    patience_seconds: float | None = None,
    shrinkage: float = 0.0,
    max_occupancy: float | None = None,
    rows_below: int = 3,
    rows_above: int = 3,
) -> ErlangTable:
    """Staffing table around the least number of agents meeting the service-level goal (and occupancy cap)."""
    inf = math.inf
    volume = _check("volume", volume, 0, inf)
    interval = _check("interval_minutes", interval_minutes, 0, inf)
    aht = _check("aht_seconds", aht_seconds, 0, inf)
    target = _check("target_sl", target_sl, 0, 1, high_open=True)
    within = _check("within_seconds", within_seconds, 0, inf, low_open=False)
    shrinkage = _check("shrinkage", shrinkage, 0, 1, low_open=False, high_open=True)
    if patience_seconds is not None:
        patience_seconds = _check("patience_seconds", patience_seconds, 0, inf)
    if max_occupancy is not None:
        max_occupancy = _check("max_occupancy", max_occupancy, 0, 1)
    rate = volume / (interval * 60.0)
    load = rate * aht
    try:
        check_load(load)
    except ValueError as error:
        raise StudyError(f"--volume {volume:g} in {interval:g} minutes: {error}") from None

    def row(c: int) -> ErlangRow:
        if patience_seconds is None:
            sl = erlang_c_service_level(c, rate, aht, within)
            values = (erlang_c(c, load), erlang_c_asa(c, rate, aht), sl, min(load / c, 1.0), None)
        else:
            res = erlang_a(c, rate, aht, patience_seconds, within)
            values = (res.p_wait, res.asa_served, res.service_level, res.occupancy, res.p_abandon)
        occupancy = values[3]
        return ErlangRow(c, *values, values[2] >= target, max_occupancy is None or occupancy <= max_occupancy)

    if patience_seconds is None:
        for_sl = servers_for_service_level(rate, aht, within, target)
        least = math.floor(load) + 1  # Erlang C needs more agents than Erlangs
    else:
        for_sl = servers_for_erlang_a(rate, aht, patience_seconds, threshold=within, target_sl=target)
        least = 1
    required = for_sl
    while not row(required).within_occupancy:
        required += 1
    scheduled = math.ceil(required / (1.0 - shrinkage) - 1e-9)
    first = max(least, min(for_sl, required) - rows_below)
    rows = [row(c) for c in range(first, required + rows_above + 1)]
    return ErlangTable(
        "Erlang C" if patience_seconds is None else "Erlang A", rate, aht, load, target, within,
        patience_seconds, shrinkage, max_occupancy, for_sl, required, scheduled, rows,
    )
