"""Staffing by interval: SIPP (stationary independent period by period) and the staffing rule of the
simulation-based iterative staffing algorithm.

**SIPP** sizes each interval on its own with Erlang A (Erlang C without patience), as if the interval's
average arrival rate lasted for ever. It is what most workforce tools do, and it is known to miss when
handle times are long against the interval or the rate changes fast: the queue built in one interval
spills into the next (Green, Kolesar & Whitt 2007).

**The iterative staffing algorithm** (Feldman, Mandelbaum, Massey & Whitt 2008) simulates the day
with the current staffing, estimates the distribution of the number of contacts in the system ``N(t)``
(waiting for the role or with it), and sets the new staffing at ``t`` to the least ``s`` whose
service level an arrival at ``t`` would meet if it found ``N(t)`` there; repeated until the staffing
stops changing. With a zero threshold the rule is theirs exactly: the least ``s`` with
``P(N(t) >= s) <= alpha``. With a threshold ``tau`` an arrival that finds ``n >= s`` present waits for
``n - s + 1`` service completions at rate ``s mu`` (exponential services), so it is answered within
``tau`` with probability ``P(Erlang(n - s + 1, s mu) <= tau)``; :func:`service_level_given_counts`
averages that over the sampled ``N(t)``. Lags, abandonment and the triage -> resolver -> desk network
are all in the simulated ``N(t)``, which is why the algorithm reaches time-stable service levels where
SIPP does not.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

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


def service_level_given_counts(counts: np.ndarray, servers: int, service_rate: float, threshold: float) -> float:
    """Share of arrivals answered within ``threshold`` with ``servers`` staff when an arrival finds
    ``n`` contacts present, ``n`` drawn from the sample ``counts`` (see the module docstring)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size == 0:
        return 1.0
    if servers <= 0:
        return float(np.mean(counts < 0))  # nobody to answer: nobody is answered
    ahead = counts - servers + 1  # completions to wait for; <= 0 means a free staff member
    waits = ahead[ahead > 0]
    if waits.size == 0:
        return 1.0
    rate_tau = servers * service_rate * threshold
    within = _erlang_cdf(waits, rate_tau)
    return float((np.sum(ahead <= 0) + np.sum(within)) / counts.size)


def _erlang_cdf(stages: np.ndarray, rate_tau: float) -> np.ndarray:
    """P(Erlang(k, r) <= tau) = P(Poisson(r tau) >= k), for each k in ``stages``."""
    if rate_tau <= 0:
        return np.zeros(stages.size)
    top = int(stages.max())
    j = np.arange(top)
    log_terms = -rate_tau + j * math.log(rate_tau) - np.array([math.lgamma(x + 1) for x in j])
    below = np.concatenate([[0.0], np.cumsum(np.exp(log_terms))])  # below[k] = P(Poisson < k)
    return np.clip(1.0 - below[stages], 0.0, 1.0)


def iterative_headcount(
    counts: np.ndarray, service_rate: float, threshold: float, target_service_level: float, limit: int
) -> int:
    """The algorithm's staffing rule at one time point: least ``s`` in ``[0, limit]`` whose
    :func:`service_level_given_counts` meets the target (``limit`` when none does)."""
    for servers in range(0, limit + 1):
        if service_level_given_counts(counts, servers, service_rate, threshold) >= target_service_level:
            return servers
    return limit
