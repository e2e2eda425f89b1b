"""Arrival processes: constant Poisson, a time-of-day profile with surges (piecewise NHPP), a trace.

Each is an iterator of absolute arrival times in minutes, drawn from the ``arrivals`` stream only.

A profile with surges is a piecewise-constant rate. It is generated exactly, segment by segment:
within a segment of constant rate the gaps are exponential, and at a segment's end the process
restarts at the next rate (memorylessness makes the restart exact). The cost is one draw per
arrival plus one per segment, whatever the peak rate — thinning against the peak rate would cost
one draw per *candidate*, which explodes when a short, tall surge sets the peak.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..config.loading import read_trace
from ..config.scenario import Arrivals
from .random import Sampler


def arrival_times(arrivals: Arrivals, horizon: float, rng: np.random.Generator) -> Iterator[float]:
    """Absolute arrival times in [0, horizon)."""
    if arrivals.trace is not None:
        for t in read_trace(arrivals.trace):
            if t >= horizon:
                return
            yield t
        return
    gap = Sampler(lambda n: rng.exponential(1.0, n), 1.0)
    for start, end, rate in arrivals.segments(horizon):
        if rate <= 0:
            continue
        mean_gap = 60.0 / rate
        t = start
        while True:
            t += gap() * mean_gap
            if t >= end:
                break
            yield t
