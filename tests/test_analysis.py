"""Queueing formulas and statistics pinned to published and independently computed values.

Independent references used here:
* brute-force CTMC solves (dense generator, numpy linear algebra) of M/M/c and M/M/c+M;
* a brute-force tagged-customer absorbing chain (uniformization, linear solves) for the
  Erlang A service level and the mean wait of served customers;
* the classic call-centre example (100 calls / 30 min, AHT 180 s, 80/20): with 13 agents
  P(wait) = 0.2853, SL = 79.6%; with 14 agents P(wait) = 0.1741, SL = 88.8%, ASA = 7.8 s,
  so 14 agents are needed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from csr_marl.analysis import (
    ErlangAResult,
    cobham_waits,
    erlang_a,
    erlang_b,
    erlang_c,
    erlang_c_asa,
    erlang_c_occupancy,
    erlang_c_service_level,
    halfin_whitt_p_wait,
    mean_ci,
    normal_cdf,
    normal_quantile,
    proportion_ci,
    servers_for_erlang_a,
    servers_for_service_level,
    square_root_staffing,
    summarise,
    t_cdf,
    t_quantile,
)

LAM = 100.0 / 30.0  # calls per minute
AHT = 3.0  # minutes
T20 = 20.0 / 60.0  # 20 seconds in minutes


# ----------------------------------------------------------------- brute force
def ctmc_stationary(lam: float, mu: float, c: int, theta: float, n_max: int) -> np.ndarray:
    """Stationary law of the truncated birth-death chain by a dense linear solve."""
    n = n_max + 1
    q = np.zeros((n, n))
    for i in range(n):
        if i < n_max:
            q[i, i + 1] = lam
        if i > 0:
            q[i, i - 1] = min(i, c) * mu + max(i - c, 0) * theta
        q[i, i] = -q[i].sum()
    a = q.T.copy()
    a[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    return np.linalg.solve(a, rhs)


def tagged_chain(c: int, mu: float, theta: float, k_max: int):
    """Sub-generator of the tagged waiting customer (positions 1..k_max) and exit rates to service."""
    q = np.zeros((k_max, k_max))
    to_service = np.zeros(k_max)
    for j in range(1, k_max + 1):
        advance = c * mu + (j - 1) * theta
        q[j - 1, j - 1] = -(advance + theta)
        if j == 1:
            to_service[0] = advance
        else:
            q[j - 1, j - 2] = advance
    return q, to_service


def served_within(q: np.ndarray, to_service: np.ndarray, start: np.ndarray, t: float) -> float:
    """P(absorbed in 'served' by time t) by uniformization of the augmented chain."""
    rate = float(-np.diag(q).min())
    k = q.shape[0]
    p_mat = np.zeros((k + 1, k + 1))
    p_mat[:k, :k] = np.eye(k) + q / rate
    p_mat[:k, k] = to_service / rate
    p_mat[k, k] = 1.0  # (abandonment mass just leaks out)
    vec = np.append(start, 0.0)
    weight = math.exp(-rate * t)
    total = weight * vec[k]
    for m in range(1, 2000):
        vec = vec @ p_mat
        weight *= rate * t / m
        total += weight * vec[k]
        if m > rate * t and weight < 1e-20:
            break
    return total


# ------------------------------------------------------------------ Erlang B/C
def test_erlang_b_published():
    assert erlang_b(10, 5.0) == pytest.approx(0.018385, abs=5e-7)
    assert erlang_b(0, 3.0) == 1.0
    assert erlang_b(1, 1.0) == pytest.approx(0.5)


def test_classic_call_centre_example():
    a = LAM * AHT
    assert a == pytest.approx(10.0)
    assert erlang_c(13, a) == pytest.approx(0.285270, abs=1e-6)
    assert erlang_c_service_level(13, LAM, AHT, T20) == pytest.approx(0.795595, abs=1e-6)
    assert erlang_c(14, a) == pytest.approx(0.174132, abs=1e-6)
    assert erlang_c_service_level(14, LAM, AHT, T20) == pytest.approx(0.888350, abs=1e-6)
    assert erlang_c_asa(14, LAM, AHT) * 60.0 == pytest.approx(7.836, abs=1e-3)  # seconds
    assert servers_for_service_level(LAM, AHT, T20, 0.80) == 14
    assert servers_for_service_level(LAM, AHT, T20, 0.79) == 13
    assert erlang_c_occupancy(14, LAM, AHT) == pytest.approx(10 / 14)


@pytest.mark.parametrize("c,lam,mean_service", [(13, LAM, AHT), (1, 0.5, 1.0), (4, 3.7, 1.0), (30, 0.9, 30.0)])
def test_erlang_c_matches_brute_force_ctmc(c, lam, mean_service):
    mu = 1.0 / mean_service
    pi = ctmc_stationary(lam, mu, c, 0.0, n_max=c + 400)
    lq = float(np.dot(np.maximum(np.arange(pi.size) - c, 0), pi))
    assert erlang_c(c, lam / mu) == pytest.approx(pi[c:].sum(), abs=1e-10)
    assert erlang_c_asa(c, lam, mean_service) == pytest.approx(lq / lam, rel=1e-9)
    # Occupancy identity: mean busy servers / c = a / c.
    busy = float(np.dot(np.minimum(np.arange(pi.size), c), pi))
    assert erlang_c_occupancy(c, lam, mean_service) == pytest.approx(busy / c, abs=1e-10)


def test_erlang_c_unstable_and_edges():
    assert erlang_c(10, 10.0) == 1.0
    assert erlang_c(10, 12.0) == 1.0
    assert erlang_c(0, 1.0) == 1.0
    assert erlang_c_asa(3, 1.0, 3.0) == math.inf
    assert erlang_c_service_level(3, 1.0, 3.0, 1.0) == 0.0
    assert erlang_c_occupancy(3, 2.0, 3.0) == 1.0
    assert erlang_c_service_level(13, LAM, AHT, 0.0) == pytest.approx(1.0 - erlang_c(13, 10.0))


# ------------------------------------------------------------------- Erlang A
@pytest.mark.parametrize(
    "c,lam,mean_service,patience",
    [(13, LAM, AHT, 10.0), (5, LAM, AHT, 2.0), (8, 2.0, 3.0, 1.5), (0, 1.0, 1.0, 4.0), (3, 0.5, 2.0, 0.7)],
)
def test_erlang_a_matches_brute_force_ctmc(c, lam, mean_service, patience):
    mu, theta = 1.0 / mean_service, 1.0 / patience
    pi = ctmc_stationary(lam, mu, c, theta, n_max=c + 150)
    n = np.arange(pi.size)
    lq = float(np.dot(np.maximum(n - c, 0), pi))
    res = erlang_a(c, lam, mean_service, patience, threshold=0.5)
    assert isinstance(res, ErlangAResult)
    assert res.p_wait == pytest.approx(pi[c:].sum(), abs=1e-10)
    assert res.mean_queue == pytest.approx(lq, abs=1e-10)
    assert res.p_abandon == pytest.approx(theta * lq / lam, abs=1e-10)
    assert res.asa_all == pytest.approx(lq / lam, abs=1e-10)
    # Occupancy identity: served throughput / capacity = mean busy servers / c.
    if c > 0:
        busy = float(np.dot(np.minimum(n, c), pi))
        assert res.occupancy == pytest.approx(busy / c, abs=1e-10)
        assert res.occupancy == pytest.approx(lam * (1 - res.p_abandon) / (c * mu), abs=1e-10)

    # Tagged customer: service level and the mean wait of those served.
    k_max = pi.size - c
    q, to_service = tagged_chain(c, mu, theta, k_max)
    start = pi[c:]
    sl = pi[:c].sum() + served_within(q, to_service, start, 0.5)
    assert res.service_level == pytest.approx(sl, abs=1e-10)
    if c > 0:
        h = np.linalg.solve(-q, to_service)  # P(served | position)
        g = np.linalg.solve(-q, h)  # E[wait; served | position]
        assert float(np.dot(start, 1 - h)) == pytest.approx(res.p_abandon, abs=1e-10)
        served = pi[:c].sum() + float(np.dot(start, h))
        assert res.asa_served == pytest.approx(float(np.dot(start, g)) / served, rel=1e-9)
    else:
        assert res.p_abandon == pytest.approx(1.0)
        assert math.isnan(res.asa_served)
        assert res.service_level == 0.0


def test_erlang_a_reduces_to_erlang_c_for_long_patience():
    res = erlang_a(13, LAM, AHT, 1e9, threshold=T20)
    assert res.p_wait == pytest.approx(erlang_c(13, 10.0), abs=1e-7)
    assert res.p_abandon < 1e-8
    assert res.asa_all == pytest.approx(erlang_c_asa(13, LAM, AHT), rel=1e-7)
    assert res.asa_served == pytest.approx(erlang_c_asa(13, LAM, AHT), rel=1e-7)
    assert res.service_level == pytest.approx(erlang_c_service_level(13, LAM, AHT, T20), abs=1e-7)
    inf = erlang_a(13, LAM, AHT, math.inf, threshold=T20)
    assert inf.p_wait == pytest.approx(erlang_c(13, 10.0), rel=1e-12)
    assert inf.service_level == pytest.approx(erlang_c_service_level(13, LAM, AHT, T20), rel=1e-12)
    with pytest.raises(ValueError):
        erlang_a(9, LAM, AHT, math.inf)


def test_erlang_a_reduces_to_erlang_b_for_zero_patience():
    res = erlang_a(13, LAM, AHT, 1e-9, threshold=T20)
    b = erlang_b(13, 10.0)
    assert res.p_abandon == pytest.approx(b, rel=1e-7)
    assert res.p_wait == pytest.approx(b, rel=1e-7)
    assert res.service_level == pytest.approx(1.0 - b, rel=1e-7)
    assert res.occupancy == pytest.approx(10.0 * (1 - b) / 13, rel=1e-7)


def test_erlang_a_overloaded_and_sl_monotone():
    res = erlang_a(5, LAM, AHT, 2.0, threshold=1.0)  # a = 10 >= c = 5: still stable
    assert 0.0 < res.p_abandon < 1.0 and 0.0 < res.occupancy < 1.0
    sls = [erlang_a(c, LAM, AHT, 5.0, threshold=T20).service_level for c in range(0, 25)]
    assert all(x <= y + 1e-15 for x, y in zip(sls, sls[1:]))
    ts = [erlang_a(12, LAM, AHT, 5.0, threshold=t).service_level for t in (0.0, 0.1, 1.0, 10.0, math.inf)]
    assert all(x <= y + 1e-15 for x, y in zip(ts, ts[1:]))
    assert ts[-1] == pytest.approx(1 - erlang_a(12, LAM, AHT, 5.0).p_abandon, abs=1e-12)


def test_servers_for_erlang_a():
    c = servers_for_erlang_a(LAM, AHT, 10.0, threshold=T20, target_sl=0.8)
    assert erlang_a(c, LAM, AHT, 10.0, T20).service_level >= 0.8
    assert erlang_a(c - 1, LAM, AHT, 10.0, T20).service_level < 0.8
    c2 = servers_for_erlang_a(LAM, AHT, 10.0, max_abandon=0.02)
    assert erlang_a(c2, LAM, AHT, 10.0).p_abandon <= 0.02 < erlang_a(c2 - 1, LAM, AHT, 10.0).p_abandon
    both = servers_for_erlang_a(LAM, AHT, 10.0, threshold=T20, target_sl=0.8, max_abandon=0.02)
    assert both == max(c, c2)
    assert servers_for_erlang_a(LAM, AHT, math.inf, threshold=T20, target_sl=0.8) == 14
    with pytest.raises(ValueError):
        servers_for_erlang_a(LAM, AHT, 10.0)
    with pytest.raises(ValueError):
        servers_for_erlang_a(LAM, AHT, 10.0, target_sl=0.8)


# --------------------------------------------------------------------- Cobham
def test_cobham_weighted_mean_equals_fcfs():
    rates, c, aht = [0.4, 1.1, 0.9, 0.6], 11, 3.0
    waits = cobham_waits(c, rates, aht)
    fcfs = erlang_c_asa(c, sum(rates), aht)
    assert np.dot(rates, waits) / sum(rates) == pytest.approx(fcfs, rel=1e-12, abs=1e-12)
    assert waits == sorted(waits)  # lower priority waits longer
    # Hand computation of the first two classes.
    cmu = c / aht
    base = erlang_c(c, sum(rates) * aht) / cmu
    assert waits[0] == pytest.approx(base / (1 - 0.4 / cmu))
    assert waits[1] == pytest.approx(base / ((1 - 0.4 / cmu) * (1 - 1.5 / cmu)))


def test_cobham_single_class_is_erlang_c():
    assert cobham_waits(13, [LAM], AHT)[0] == pytest.approx(erlang_c_asa(13, LAM, AHT), rel=1e-12)
    with pytest.raises(ValueError):
        cobham_waits(3, [0.5, 0.6], 3.0)  # a = 3.3 >= 3
    with pytest.raises(ValueError):
        cobham_waits(3, [], 3.0)


# ------------------------------------------------------ square-root staffing
def test_square_root_staffing_and_halfin_whitt():
    assert square_root_staffing(100.0, 1.0) == 110
    assert square_root_staffing(9.0, 1.0) == 12
    assert square_root_staffing(10.0, 0.5) == math.ceil(10 + 0.5 * math.sqrt(10))
    assert square_root_staffing(4.0, -5.0) == 0
    # [1 + beta*Phi(beta)/phi(beta)]^-1 with Phi(1) = 0.8413447461, phi(1) = 0.2419707245.
    assert halfin_whitt_p_wait(1.0) == pytest.approx(1 / (1 + 0.8413447461 / 0.2419707245), abs=1e-9)
    assert halfin_whitt_p_wait(1.0) == pytest.approx(0.223361, abs=1e-6)
    assert halfin_whitt_p_wait(0.0) == 1.0
    # The limit is approached by Erlang C with c = a + beta*sqrt(a) for large a.
    a = 10_000.0
    assert erlang_c(10_100, a) == pytest.approx(halfin_whitt_p_wait(1.0), abs=0.01)
    with pytest.raises(ValueError):
        halfin_whitt_p_wait(-1.0)


# ---------------------------------------------------------------- statistics
@pytest.mark.parametrize(
    "p,df,expected",
    [(0.975, 9, 2.262157), (0.995, 39, 2.707913), (0.975, 29, 2.045230), (0.975, 1, 12.706205),
     (0.975, 2, 4.302653), (0.95, 5, 2.015048), (0.999, 10, 4.143700), (0.9, 100, 1.290075)],
)
def test_t_quantile_published(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-6)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-6)


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 7, 30, 1000])
@pytest.mark.parametrize("p", [1e-8, 0.001, 0.3, 0.5, 0.9, 0.999999])
def test_t_quantile_round_trip(p, df):
    x = t_quantile(p, df)
    assert t_cdf(x, df) == pytest.approx(p, rel=1e-9)


def test_normal_quantile():
    assert normal_quantile(0.975) == pytest.approx(1.959963984540054, abs=1e-12)
    assert normal_quantile(0.995) == pytest.approx(2.5758293035489004, abs=1e-12)
    assert normal_quantile(1e-10) == pytest.approx(-6.361340902404056, abs=1e-9)
    for p in (1e-300, 1e-12, 0.01, 0.3, 0.5, 0.77, 0.9999):
        assert normal_cdf(normal_quantile(p)) == pytest.approx(p, rel=1e-12)
    for bad in (0.0, 1.0, -0.1, math.nan):
        with pytest.raises(ValueError):
            normal_quantile(bad)


def test_mean_ci():
    values = list(range(1, 11))
    mean, low, high = mean_ci(values)
    half = 2.262157163798 * np.std(values, ddof=1) / math.sqrt(10)
    assert mean == 5.5
    assert (low, high) == pytest.approx((5.5 - half, 5.5 + half), abs=1e-9)
    m1, lo1, hi1 = mean_ci([3.0, math.nan])
    assert m1 == 3.0 and math.isnan(lo1) and math.isnan(hi1)
    with pytest.raises(ValueError):
        mean_ci([])
    with pytest.raises(ValueError):
        mean_ci([1.0, 2.0], confidence=1.5)


def test_wilson_interval_published():
    # Newcombe (1998): 0/10 -> (0, 0.2775); 5/10 -> (0.2366, 0.7634).
    p, low, high = proportion_ci(0, 10)
    assert (p, low) == (0.0, 0.0) and high == pytest.approx(0.277533, abs=1e-6)
    p, low, high = proportion_ci(5, 10)
    assert p == 0.5
    assert (low, high) == pytest.approx((0.236593, 0.763407), abs=1e-6)
    assert proportion_ci(10, 10)[2] == 1.0
    for bad in ((11, 10), (-1, 10), (0, 0), (1.5, 10)):
        with pytest.raises(ValueError):
            proportion_ci(*bad)


def test_summarise():
    records = [
        {"sl": 0.8, "asa": 1.0, "name": "a", "flag": True, "n": 10},
        {"sl": 0.9, "asa": math.nan, "name": "b", "flag": False, "n": 12},
        {"sl": 0.7, "name": "c", "n": 14, "empty": math.nan},
    ]
    out = summarise(records)
    assert list(out) == ["sl", "asa", "n", "empty"]
    assert out["sl"]["mean"] == pytest.approx(0.8) and out["sl"]["n"] == 3
    assert out["sl"]["low"] < 0.8 < out["sl"]["high"]
    assert out["asa"]["n"] == 1 and out["asa"]["mean"] == 1.0
    assert out["n"]["mean"] == 12.0
    assert out["empty"]["n"] == 0 and math.isnan(out["empty"]["mean"])
    assert summarise([]) == {}


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "call",
    [
        lambda: erlang_b(-1, 5.0),
        lambda: erlang_b(3, 0.0),
        lambda: erlang_b(3, -2.0),
        lambda: erlang_b(2.5, 1.0),
        lambda: erlang_c(3, math.nan),
        lambda: erlang_c_asa(3, 0.0, 1.0),
        lambda: erlang_c_asa(3, 1.0, -1.0),
        lambda: erlang_c_service_level(3, 1.0, 1.0, -0.5),
        lambda: erlang_c_occupancy(0, 1.0, 1.0),
        lambda: erlang_a(-1, 1.0, 1.0, 1.0),
        lambda: erlang_a(2, 1.0, 1.0, 0.0),
        lambda: erlang_a(2, 1.0, 0.0, 1.0),
        lambda: erlang_a(2, 1.0, 1.0, 1.0, threshold=-1.0),
        lambda: cobham_waits(3, [0.5, -0.1], 1.0),
        lambda: square_root_staffing(0.0, 1.0),
        lambda: servers_for_service_level(1.0, 1.0, 0.5, 1.0),
        lambda: t_quantile(0.975, 0),
    ],
)
def test_bad_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------ properties
@settings(max_examples=200, deadline=None)
@given(a=st.floats(min_value=0.01, max_value=80.0), c=st.integers(min_value=0, max_value=100))
def test_erlang_c_in_unit_interval_and_decreasing(a, c):
    now, more = erlang_c(c, a), erlang_c(c + 1, a)
    assert 0.0 <= more <= now <= 1.0
    assert 0.0 <= erlang_b(c, a) <= now


@settings(max_examples=50, deadline=None)
@given(
    c=st.integers(min_value=0, max_value=30),
    a=st.floats(min_value=0.05, max_value=40.0),
    patience=st.floats(min_value=0.05, max_value=50.0),
    t=st.floats(min_value=0.0, max_value=10.0),
)
@example(c=0, a=1.0, patience=2.0, t=5e-324)  # a threshold too small to reach anyone in
def test_erlang_a_consistency(c, a, patience, t):
    res = erlang_a(c, a, 1.0, patience, threshold=t)
    for p in (res.p_wait, res.p_abandon, res.service_level, res.occupancy):
        assert -1e-12 <= p <= 1.0 + 1e-12
    assert res.p_abandon <= res.p_wait + 1e-12
    assert res.service_level <= 1.0 - res.p_abandon + 1e-9
    assert res.service_level >= 1.0 - res.p_wait - 1e-9
