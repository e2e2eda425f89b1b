"""Erlang A: the M/M/c+M queue (exponential patience), solved exactly.

The number in system is a birth-death chain with birth rate ``lam`` and death rate
``min(n, c)*mu + max(n - c, 0)*theta``.  It is stable for every ``c >= 0`` when
``theta > 0``.  We build ``log pi_n`` by cumulative sums (no overflow), truncate the
queue part where a geometric bound shows the remaining mass is below ~1e-17 of the
largest term, and normalise (Garnett, Mandelbaum & Reiman 2002).

Waiting-time quantities are exact, per arrival state (PASTA).  A tagged arrival that
finds ``n = c + k - 1`` in system (``k >= 1``) stands at queue position ``k``.  While it
is at position ``j`` the queue ahead of it advances at rate ``r_j = c*mu + (j-1)*theta``
(a service completion or an abandonment ahead; people behind are irrelevant under FCFS),
and it abandons itself at rate ``theta``.  Its time to reach a server is
``S_k = sum_j Exp(r_j)``, independent of its own patience ``P ~ Exp(theta)``, so

* ``P(served | k) = E[exp(-theta*S_k)] = prod_j r_j/(r_j + theta) = c*mu/(c*mu + k*theta)``
  (the product telescopes);
* ``E[S_k; served | k] = P(served | k) * sum_{i=1..k} 1/(c*mu + i*theta)``
  (derivative of the Laplace transform at ``theta``);
* ``P(S_k <= t, served | k) = P(served | k) * P(S'_k <= t)``, where ``S'_k`` (the
  exponentially tilted ``S_k``) is a sum of ``Exp(c*mu + i*theta)``, ``i = 1..k``.  Its
  Laplace transform is the Mellin transform of a Beta law: ``S'_k = -ln(U)/theta`` with
  ``U ~ Beta(c*mu/theta + 1, k)``.  With integer second parameter the incomplete beta is a
  finite negative-binomial sum of positive terms, so
  ``P(S'_k > t) = sum_{j<k} T_j``, ``T_0 = exp(-(c*mu + theta)*t)``,
  ``T_j = T_{j-1} * (c*mu + j*theta) * g / j``, ``g = (1 - exp(-theta*t))/theta``
  (``g = t`` for ``theta = 0``, the Erlang/Gamma case).  Cumulative sums give every ``k``
  at once, stably, for any ``theta`` from 1e-12 to 1e12.

The service level reported is **P(an offered customer starts service within t)**:
customers who abandon count as failures whenever they abandon (early abandons are not
excluded from the denominator and not counted as good).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import check_load, check_nonneg, check_positive, check_probability, check_servers
from .erlang import erlang_c

__all__ = ["ErlangAResult", "erlang_a", "servers_for_erlang_a"]

#: Truncate once the remaining tail is below exp(-_TAIL_LOG) of the largest term.
_TAIL_LOG = 40.0
#: Refuse chains longer than this (tiny patience rate with a heavily overloaded queue).
_MAX_QUEUE_STATES = 5_000_000


@dataclass(frozen=True)
class ErlangAResult:
    """Steady-state performance of the M/M/c+M (Erlang A) queue.

    Attributes:
        servers: number of agents ``c``.
        offered_load: ``a = arrival_rate * mean_service`` (Erlangs).
        p_wait: probability that an arrival finds all agents busy (PASTA).
        p_abandon: probability that an offered customer abandons, ``theta*E[Lq]/lambda``.
        mean_queue: ``E[Lq]``, the mean number waiting.
        asa_all: mean time in queue over all offered customers (served or abandoned),
            ``E[Lq]/lambda`` by Little's law.
        asa_served: mean wait of the customers who are served (``nan`` if nobody is).
        service_level: ``P(an offered customer starts service within threshold)``;
            ``None`` when no threshold was given.
        occupancy: ``lambda*(1 - p_abandon)/(c*mu)`` (0.0 when ``c == 0``).
        threshold: the service-level threshold used, or ``None``.
    """

    servers: int
    offered_load: float
    p_wait: float
    p_abandon: float
    mean_queue: float
    asa_all: float
    asa_served: float
    service_level: float | None
    occupancy: float
    threshold: float | None = None


def _stationary(c: int, lam: float, mu: float, theta: float) -> np.ndarray:
    """Normalised stationary distribution ``pi_0 .. pi_{c+K}`` of the truncated chain."""
    # Non-queue part, n = 0..c: log pi_n = sum_{m<=n} log(lam/(m mu)).
    if c > 0:
        m = np.arange(1, c + 1, dtype=float)
        lower = np.concatenate(([0.0], np.cumsum(math.log(lam) - np.log(m * mu))))
    else:
        lower = np.zeros(1)
    log_pc = float(lower[-1])
    running_max = float(lower.max())
    cmu = c * mu
    # Queue part, n = c + k, k = 1..K, in growing chunks until the tail bound is met.
    pieces: list[np.ndarray] = []
    last, start, size = log_pc, 1, 1024
    while True:
        k = np.arange(start, start + size, dtype=float)
        chunk = last + np.cumsum(math.log(lam) - np.log(cmu + k * theta))
        pieces.append(chunk)
        last = float(chunk[-1])
        running_max = max(running_max, float(chunk.max()))
        k_end = start + size - 1
        ratio = lam / (cmu + (k_end + 1) * theta)  # decreasing in k: bounds the tail
        if ratio < 1.0:
            tail_log = last + math.log(ratio) - math.log1p(-ratio)
            if tail_log < running_max - _TAIL_LOG:
                break
        start += size
        if start > _MAX_QUEUE_STATES:
            raise ValueError(
                "Erlang A chain too long to solve: patience is far longer than the "
                "overloaded queue can sustain (increase servers or shorten patience)"
            )
        size *= 2
    log_pi = np.concatenate([lower] + pieces)
    pi = np.exp(log_pi - running_max)
    return pi / pi.sum()


def _erlang_c_limit(c: int, lam: float, mu: float, a: float, threshold: float | None) -> ErlangAResult:
    """The ``theta = 0`` (infinite patience) case: Erlang C closed forms."""
    if a >= c:
        raise ValueError(
            f"infinite patience with offered load {a:g} >= servers {c}: the queue is unstable"
        )
    p_wait = erlang_c(c, a)
    rho = a / c
    asa = p_wait / (c * mu - lam)
    sl = None
    if threshold is not None:
        sl = 1.0 if math.isinf(threshold) else 1.0 - p_wait * math.exp(-(c * mu - lam) * threshold)
    return ErlangAResult(c, a, p_wait, 0.0, lam * asa, asa, asa, sl, rho, threshold)


def erlang_a(
    servers: int,
    arrival_rate: float,
    mean_service: float,
    mean_patience: float,
    threshold: float | None = None,
) -> ErlangAResult:
    """Exact steady state of the M/M/c+M (Erlang A) queue.

    Args:
        servers: number of agents ``c >= 0`` (any load is stable when patience is finite).
        arrival_rate: Poisson arrival rate ``lambda`` (per time unit, e.g. per minute).
        mean_service: mean handle time ``1/mu`` (same time unit).
        mean_patience: mean exponential patience ``1/theta``; ``math.inf`` means nobody
            abandons (Erlang C, requires ``lambda/mu < c``).
        threshold: optional service-level threshold ``t``; ``service_level`` is then
            ``P(an offered customer starts service within t)`` (abandons count as failures).

    Returns:
        An :class:`ErlangAResult`.

    Raises:
        ValueError: on non-positive rates/means, negative servers or threshold, or an
            unstable infinite-patience queue.
    """
    c = check_servers(servers)
    lam = check_positive("arrival_rate", arrival_rate)
    mu = 1.0 / check_positive("mean_service", mean_service)
    patience = check_positive("mean_patience", mean_patience, allow_inf=True)
    t = None if threshold is None else check_nonneg("threshold", threshold, allow_inf=True)
    a = lam / mu
    if math.isinf(patience):
        return _erlang_c_limit(c, lam, mu, a, t)
    theta = 1.0 / patience
    cmu = c * mu

    pi = _stationary(c, lam, mu, theta)
    p_lower = float(pi[:c].sum())
    q = pi[c:]  # states n = c + k - 1 for k = 1..len(q)
    k = np.arange(1, q.size + 1, dtype=float)
    p_wait = float(q.sum())
    mean_queue = float(np.dot(k - 1.0, q))
    p_abandon = min(1.0, theta * mean_queue / lam)
    served_k = cmu / (cmu + k * theta)  # P(served | arrival at queue position k)
    p_served = p_lower + float(np.dot(q, served_k))
    asa_all = mean_queue / lam
    if c == 0 or p_served <= 0.0:
        asa_served = math.nan
    else:
        harmonic = np.cumsum(1.0 / (cmu + k * theta))
        asa_served = float(np.dot(q, served_k * harmonic)) / p_served

    sl = None
    if t is not None:
        g = -math.expm1(-theta * t) / theta
        if math.isinf(t):
            sl = p_served
        elif g == 0.0:  # t == 0, or so small that no one is reached in it
            sl = p_lower
        else:
            j = np.arange(1, q.size, dtype=float)
            with np.errstate(divide="ignore"):
                steps = np.log(cmu + j * theta) + math.log(g) - np.log(j)
            log_terms = -(cmu + theta) * t + np.concatenate(([0.0], np.cumsum(steps)))
            survive = np.cumsum(np.exp(log_terms))  # P(S'_k > t) for k = 1..K
            reach = np.clip(1.0 - survive, 0.0, 1.0)
            sl = p_lower + float(np.dot(q, served_k * reach))
    occupancy = lam * p_served / cmu if c > 0 else 0.0
    return ErlangAResult(
        servers=c,
        offered_load=a,
        p_wait=p_wait,
        p_abandon=p_abandon,
        mean_queue=mean_queue,
        asa_all=asa_all,
        asa_served=asa_served,
        service_level=sl,
        occupancy=occupancy,
        threshold=t,
    )


def servers_for_erlang_a(
    arrival_rate: float,
    mean_service: float,
    mean_patience: float,
    threshold: float | None = None,
    target_sl: float | None = None,
    max_abandon: float | None = None,
) -> int:
    """Least number of agents meeting every given Erlang A target.

    Args:
        arrival_rate: contacts per unit time, as for :func:`erlang_a`.
        mean_service: mean handle time, as for :func:`erlang_a`.
        mean_patience: mean patience (exponential), as for :func:`erlang_a`.
        threshold: service-level threshold (required with ``target_sl``).
        target_sl: required ``P(offered customer starts service within threshold)``, in (0, 1).
        max_abandon: largest acceptable abandonment probability, in (0, 1).

    Both targets are monotone in the number of agents, so the answer is found by
    doubling then bisection.

    Raises:
        ValueError: if no target is given, ``target_sl`` lacks a threshold, or inputs are invalid.
    """
    if target_sl is None and max_abandon is None:
        raise ValueError("give target_sl (with threshold) and/or max_abandon")
    if target_sl is not None:
        target_sl = check_probability("target_sl", target_sl)
        if threshold is None:
            raise ValueError("target_sl needs a threshold")
    if max_abandon is not None:
        max_abandon = check_probability("max_abandon", max_abandon)
    lam = check_positive("arrival_rate", arrival_rate)
    check_positive("mean_service", mean_service)
    check_positive("mean_patience", mean_patience, allow_inf=True)
    a = check_load(lam * float(mean_service))

    def ok(c: int) -> bool:
        if math.isinf(float(mean_patience)) and a >= c:
            return False
        res = erlang_a(c, lam, mean_service, mean_patience, threshold if target_sl is not None else None)
        if target_sl is not None and (res.service_level is None or res.service_level < target_sl):
            return False
        return max_abandon is None or res.p_abandon <= max_abandon

    if ok(0):
        return 0
    lo, hi = 0, max(1, math.ceil(a))  # invariant: ok(lo) is False
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 10 * _MAX_QUEUE_STATES:
            raise ValueError("no staffing level meets the targets")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
