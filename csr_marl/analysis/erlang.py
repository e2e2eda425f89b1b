"""Erlang B/C formulas, Cobham priority waits and staffing rules.

Time unit: whatever the caller uses consistently (the project uses minutes).  Notation:
``lambda`` arrival rate, ``mu = 1/mean_service``, ``c`` agents, ``a = lambda/mu`` offered
load in Erlangs, ``rho = a/c``.  Erlang A (M/M/c+M) lives in :mod:`.erlang_a`; its names
are also reachable from this module.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

from ._checks import check_load, check_nonneg, check_positive, check_probability, check_servers

__all__ = [
    "erlang_b",
    "erlang_c",
    "erlang_c_asa",
    "erlang_c_service_level",
    "erlang_c_occupancy",
    "cobham_waits",
    "square_root_staffing",
    "halfin_whitt_p_wait",
    "servers_for_service_level",
    "ErlangAResult",
    "erlang_a",
    "servers_for_erlang_a",
]

_ERLANG_A_NAMES = frozenset({"ErlangAResult", "erlang_a", "servers_for_erlang_a"})


def __getattr__(name: str) -> Any:  # PEP 562: lazy re-export without an import cycle
    if name in _ERLANG_A_NAMES:
        module = importlib.import_module(f"{__package__}.erlang_a")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def erlang_b(servers: int, offered_load: float) -> float:
    """Blocking probability of the M/M/c/c loss system (Erlang B).

    Uses the stable recursion ``B_0 = 1``, ``B_k = a*B_{k-1} / (k + a*B_{k-1})``.

    Args:
        servers: number of servers ``c >= 0``.
        offered_load: ``a > 0`` in Erlangs.
    """
    c = check_servers(servers)
    a = check_positive("offered_load", offered_load)
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def _erlang_c_from_b(c: int, a: float, b: float) -> float:
    return c * b / (c - a * (1.0 - b))


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability of waiting in M/M/c (Erlang C); 1.0 when ``offered_load >= servers``.

    ``C = c*B / (c - a*(1 - B))`` with ``B = erlang_b(c, a)``.
    """
    c = check_servers(servers)
    a = check_positive("offered_load", offered_load)
    if a >= c:
        return 1.0
    return _erlang_c_from_b(c, a, erlang_b(c, a))


def _load(servers: int, arrival_rate: float, mean_service: float) -> tuple[int, float, float]:
    c = check_servers(servers)
    lam = check_positive("arrival_rate", arrival_rate)
    mu = 1.0 / check_positive("mean_service", mean_service)
    return c, lam, mu


def erlang_c_asa(servers: int, arrival_rate: float, mean_service: float) -> float:
    """Mean wait in queue ``E[Wq] = C/(c*mu - lambda)`` over all arrivals; ``inf`` if unstable."""
    c, lam, mu = _load(servers, arrival_rate, mean_service)
    if lam >= c * mu:
        return math.inf
    return erlang_c(c, lam / mu) / (c * mu - lam)


def erlang_c_service_level(
    servers: int, arrival_rate: float, mean_service: float, threshold: float
) -> float:
    """``P(Wq <= threshold) = 1 - C*exp(-(c*mu - lambda)*threshold)``; 0.0 if unstable."""
    c, lam, mu = _load(servers, arrival_rate, mean_service)
    t = check_nonneg("threshold", threshold, allow_inf=True)
    if lam >= c * mu:
        return 0.0
    if math.isinf(t):
        return 1.0
    return 1.0 - erlang_c(c, lam / mu) * math.exp(-(c * mu - lam) * t)


def erlang_c_occupancy(servers: int, arrival_rate: float, mean_service: float) -> float:
    """Agent occupancy ``min(a/c, 1)`` (1.0 when the queue is unstable); needs ``servers >= 1``."""
    c = check_servers(servers, minimum=1)
    _, lam, mu = _load(c, arrival_rate, mean_service)
    return min(lam / (c * mu), 1.0)


def cobham_waits(servers: int, arrival_rates: Sequence[float], mean_service: float) -> list[float]:
    """Mean queue waits per class in non-preemptive priority M/M/c (Cobham 1954).

    Class 0 has the highest priority; all classes share ``mu``.
    ``W_k = [C/(c*mu)] / [(1 - sigma_{k-1})(1 - sigma_k)]`` with
    ``sigma_k = sum_{i<=k} lambda_i/(c*mu)`` and ``C`` the Erlang C of the total load.
    The lambda-weighted mean of the ``W_k`` equals the FCFS Erlang C wait.

    Raises:
        ValueError: on invalid inputs or when the total load makes the queue unstable.
    """
    c = check_servers(servers, minimum=1)
    mu = 1.0 / check_positive("mean_service", mean_service)
    rates = [check_nonneg(f"arrival_rates[{i}]", r) for i, r in enumerate(arrival_rates)]
    if not rates:
        raise ValueError("arrival_rates must not be empty")
    total = math.fsum(rates)
    if total <= 0.0:
        raise ValueError("the total arrival rate must be > 0")
    capacity = c * mu
    if total >= capacity:
        raise ValueError(
            f"unstable: total offered load {total / mu:g} Erlangs >= {c} servers"
        )
    base = erlang_c(c, total / mu) / capacity
    waits: list[float] = []
    cumulative = 0.0
    for rate in rates:
        sigma_prev = cumulative / capacity
        cumulative += rate
        waits.append(base / ((1.0 - sigma_prev) * (1.0 - cumulative / capacity)))
    return waits


def square_root_staffing(offered_load: float, beta: float) -> int:
    """Square-root staffing ``ceil(a + beta*sqrt(a))`` (never below 0).

    ``beta`` is the quality-of-service parameter; negative values are allowed (they are
    meaningful with abandonment, Erlang A).
    """
    a = check_positive("offered_load", offered_load)
    b = float(beta)
    if not math.isfinite(b):
        raise ValueError(f"beta must be finite, got {beta!r}")
    x = a + b * math.sqrt(a)
    # Guard against ceil(12.000000000000002) == 13 from rounding.
    return max(0, math.ceil(x - 1e-12 * max(1.0, abs(x))))


def halfin_whitt_p_wait(beta: float) -> float:
    """Halfin-Whitt limit of P(wait) under square-root staffing: ``[1 + beta*Phi(beta)/phi(beta)]^-1``.

    Requires ``beta >= 0`` (``beta = 0`` gives 1).
    """
    b = check_nonneg("beta", beta)
    phi = math.exp(-0.5 * b * b) / math.sqrt(2.0 * math.pi)
    big_phi = 0.5 * math.erfc(-b / math.sqrt(2.0))
    if phi == 0.0:  # beta > ~38: P(wait) underflows to 0
        return 0.0
    return 1.0 / (1.0 + b * big_phi / phi)


def servers_for_service_level(
    arrival_rate: float, mean_service: float, threshold: float, target: float
) -> int:
    """Least number of agents whose Erlang C service level ``P(Wq <= threshold)`` is >= ``target``.

    Only stable staffing (``c > a``) is considered.  Erlang B is advanced incrementally,
    so the cost is linear in the answer.
    """
    lam = check_positive("arrival_rate", arrival_rate)
    mu = 1.0 / check_positive("mean_service", mean_service)
    t = check_nonneg("threshold", threshold)
    goal = check_probability("target", target)
    a = check_load(lam / mu)
    b, c = 1.0, 0
    while True:
        c += 1
        b = a * b / (c + a * b)
        if a >= c:
            continue
        sl = 1.0 - _erlang_c_from_b(c, a, b) * math.exp(-(c * mu - lam) * t)
        if sl >= goal:
            return c
