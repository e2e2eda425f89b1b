"""Arrival processes: constant Poisson, a time-of-day profile with surges (NHPP by thinning), a trace.

Each is an iterator of absolute arrival times in minutes, drawn from the ``arrivals`` stream only.
"""

from __future__ import annotations

import bisect
from typing import Iterator

import numpy as np

from ..config.loading import read_trace
from ..config.scenario import Arrivals
from .random import Sampler, UniformStream


def rate_function(arrivals: Arrivals):
    """λ(t) in tickets per minute, for profiles and surges (constant rate included)."""
    if arrivals.profile is not None:
        starts = [start for start, _ in arrivals.profile]
        rates = [rate / 60.0 for _, rate in arrivals.profile]
    else:
        starts, rates = [0.0], [float(arrivals.rate_per_hour or 0.0) / 60.0]
    surges = [(s.start_minute, s.end_minute, s.multiplier) for s in arrivals.surges]

    def rate(t: float) -> float:
        value = rates[bisect.bisect_right(starts, t) - 1]
        for start, end, multiplier in surges:
            if start <= t < end:
                value *= multiplier
        return value

    peak = max(rates)
    for _, _, multiplier in surges:
        peak *= max(multiplier, 1.0)
    return rate, peak


def arrival_times(arrivals: Arrivals, horizon: float, rng: np.random.Generator) -> Iterator[float]:
    """Absolute arrival times in [0, horizon)."""
    if arrivals.trace is not None:
        for t in read_trace(arrivals.trace):
            if t >= horizon:
                return
            yield t
        return
    gap = Sampler(lambda n: rng.exponential(1.0, n), 1.0)
    if arrivals.rate_per_hour is not None and not arrivals.surges:
        mean_gap = 60.0 / arrivals.rate_per_hour
        t = 0.0
        while True:
            t += gap() * mean_gap
            if t >= horizon:
                return
            yield t
    # Lewis & Shedler thinning: candidates at the peak rate, kept with probability λ(t)/peak.
    rate, peak = rate_function(arrivals)
    accept = UniformStream(rng)
    t = 0.0
    while True:
        t += gap() / peak
        if t >= horizon:
            return
        if accept() * peak < rate(t):
            yield t
