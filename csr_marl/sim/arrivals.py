"""Arrival processes: constant Poisson, a time-of-day profile with surges (piecewise NHPP), a trace.

Each is an iterator of absolute arrival times in minutes, drawn from the ``arrivals`` stream only.

A profile with surges is a piecewise-constant rate. It is generated exactly, segment by segment:
within a segment of constant rate the gaps are exponential, and at a segment's end the process
restarts at the next rate (memorylessness makes the restart exact). The cost is one draw per
arrival plus one per segment, whatever the peak rate — thinning against the peak rate would cost
one draw per *candidate*, which explodes when a short, tall surge sets the peak.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Iterator

import numpy as np

from ..config.loading import read_trace
from ..config.scenario import Arrivals
from .random import BLOCK


def arrival_times(arrivals: Arrivals, horizon: float, rng: np.random.Generator) -> Iterator[float]:
    """Absolute arrival times in [0, horizon)."""
    for block in arrival_blocks(arrivals, horizon, rng):
        yield from block


def arrival_blocks(arrivals: Arrivals, horizon: float, rng: np.random.Generator) -> Iterator[list[float]]:
    """:func:`arrival_times` in lists, one per block of draws (the core reads them without resuming a
    generator per arrival). The gaps are drawn and summed exactly as one at a time: unit exponential
    gaps in blocks of :data:`BLOCK`, each times the segment's mean gap, added in order (a cumulative
    sum adds in order too), and the gap that crosses a segment's end is used up."""
    if arrivals.trace is not None:
        yield list(takewhile(lambda t: t < horizon, read_trace(arrivals.trace)))
        return
    gaps, used = np.empty(0), 0  # unit gaps drawn, and how many of them are spent
    for start, end, rate in arrivals.segments(horizon):
        if rate <= 0:
            continue
        mean_gap = 60.0 / rate
        t = start
        while True:
            if used == len(gaps):
                gaps, used = rng.exponential(1.0, BLOCK), 0
            times = np.cumsum(np.concatenate(([t], gaps[used:] * mean_gap)))[1:]
            crossed = int(np.searchsorted(times, end, side="left"))  # the first time at or past the end
            if crossed < len(times):
                yield times[:crossed].tolist()
                used += crossed + 1
                break
            yield times.tolist()
            used, t = len(gaps), float(times[-1])
