"""Staffing by interval: SIPP (stationary independent period by period).

**SIPP** sizes each interval on its own with Erlang A (Erlang C without patience), as if the interval's
average arrival rate lasted for ever. It is what most workforce tools do, and it is known to miss when
handle times are long against the interval or the rate changes fast: the queue built in one interval
spills into the next (Green, Kolesar & Whitt 2007). The interval planner
(:mod:`csr_marl.whatif.interval_planner`) starts from it and corrects it by simulation.
"""

from __future__ import annotations

import math
from typing import Sequence

from .erlang_a import erlang_a

_MAX_SERVERS = 100_000


def sipp_headcounts(
    rates_per_minute: Sequence[float],
    mean_service: float,
    threshold: float,
    target_service_level: float,
    mean_patience: float = math.inf,
) -> list[int]:
    """Least headcount per interval whose Erlang A (C) service level P(wait <= threshold) meets the target.

    ``rates_per_minute`` is each interval's mean arrival rate to the role; ``mean_service`` its mean
    busy time per contact (minutes); ``mean_patience`` infinite means nobody abandons (Erlang C).
    """
    if not 0.0 <= target_service_level < 1.0:
        raise ValueError(f"target service level must lie in [0, 1), got {target_service_level}")
    if mean_service <= 0:
        raise ValueError(f"mean service time must be positive, got {mean_service}")
    counts = []
    for rate in rates_per_minute:
        if rate <= 0:
            counts.append(0)
            continue
        load = rate * mean_service
        servers = max(1, math.floor(load))
        while servers < _MAX_SERVERS:
            if math.isfinite(mean_patience) or servers > load:
                result = erlang_a(servers, rate, mean_service, mean_patience, threshold)
                if result.service_level is not None and result.service_level >= target_service_level:
                    break
            servers += 1
        counts.append(servers)
    return counts
