"""The simulated center agrees with queueing theory (docs/concepts/validation.md).

Each check runs 40 independent replications (seeds 0..39) of a validation preset and asserts that the
theoretical value lies inside the 99% confidence interval of the replication means.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from extras import need

import csr_marl
from csr_marl.analysis import cobham_waits, erlang_a, erlang_c, erlang_c_asa, mean_ci

pytestmark = pytest.mark.slow
REPLICATIONS = 40
LAMBDA = 2.0  # per minute (120 per hour)
MEAN_SERVICE = 1.6


def replicate(name: str, keys: list[str], overrides: dict | None = None) -> dict[str, tuple[float, float, float]]:
    scn = csr_marl.load_scenario(name, overrides)
    runs = [csr_marl.simulate(scn, seed=seed).kpis for seed in range(REPLICATIONS)]
    return {key: mean_ci([run[key] for run in runs], confidence=0.99) for key in keys}


def assert_within(ci: tuple[float, float, float], theory: float, what: str) -> None:
    mean, low, high = ci
    assert low <= theory <= high, f"{what}: theory {theory:.4f} outside 99% CI [{low:.4f}, {high:.4f}] (mean {mean:.4f})"


def test_mmc_matches_erlang_c() -> None:
    result = replicate("mmc", ["p_wait", "asa_minutes", "occupancy_resolver"])
    a = LAMBDA * MEAN_SERVICE
    assert_within(result["p_wait"], erlang_c(4, a), "P(wait)")
    assert_within(result["asa_minutes"], erlang_c_asa(4, LAMBDA, MEAN_SERVICE), "ASA")
    assert_within(result["occupancy_resolver"], a / 4, "occupancy")


def test_mmc_with_patience_matches_erlang_a() -> None:
    # Overloaded without abandonment (a = 3.2 > c = 3): Erlang A keeps it stable.
    overrides = {"staffing.resolver": 3, "customers.patience": {"dist": "exponential", "mean_minutes": 2.0}}
    result = replicate("mmc", ["p_wait", "abandonment_rate"], overrides)
    theory = erlang_a(3, LAMBDA, MEAN_SERVICE, 2.0)
    assert_within(result["p_wait"], theory.p_wait, "P(wait)")
    assert_within(result["abandonment_rate"], theory.p_abandon, "P(abandon)")


def test_priority_classes_match_cobham() -> None:
    scn = csr_marl.load_scenario("mmc_priority")
    by_class: dict[str, list[float]] = {p: [] for p in ("urgent", "high", "medium", "low")}
    for seed in range(REPLICATIONS):
        breakdown = csr_marl.simulate(scn, seed=seed).breakdown["priority"]
        for priority in by_class:
            by_class[priority].append(breakdown[priority]["asa_minutes"])
    rates = [LAMBDA * share for share in (0.1, 0.2, 0.3, 0.4)]
    theory = cobham_waits(4, rates, MEAN_SERVICE)
    for (priority, waits), expected in zip(by_class.items(), theory):
        assert_within(mean_ci(waits, 0.99), expected, f"W[{priority}]")
    # Priorities really reorder the queue: urgent waits far less than low.
    assert np.mean(by_class["urgent"]) < 0.5 * np.mean(by_class["low"])


def test_two_tier_network_matches_jackson() -> None:
    keys = ["p_wait_resolver", "p_wait_escalation", "asa_minutes_escalation", "escalation_rate"]
    result = replicate("two_tier", keys)
    assert_within(result["p_wait_resolver"], erlang_c(4, LAMBDA * MEAN_SERVICE), "tier-1 P(wait)")
    rate2 = 0.3 * LAMBDA
    assert_within(result["escalation_rate"], 0.3, "escalation share")
    assert_within(result["p_wait_escalation"], erlang_c(2, rate2 * 2.5), "tier-2 P(wait)")
    assert_within(result["asa_minutes_escalation"], erlang_c_asa(2, rate2, 2.5), "tier-2 wait")


def test_agrees_with_ciw_on_the_same_model() -> None:
    ciw = need("ciw")
    horizon, warmup = 600.0, 60.0
    ciw_p_wait = []
    for seed in range(REPLICATIONS):
        network = ciw.create_network(
            arrival_distributions=[ciw.dists.Exponential(rate=LAMBDA)],
            service_distributions=[ciw.dists.Exponential(rate=1 / MEAN_SERVICE)],
            number_of_servers=[4],
        )
        ciw.seed(seed)  # ciw only offers a global seed
        simulation = ciw.Simulation(network)
        simulation.simulate_until_max_time(horizon)
        waits = [r.waiting_time for r in simulation.get_all_records() if r.arrival_date >= warmup]
        ciw_p_wait.append(sum(w > 0 for w in waits) / len(waits))
    ours = replicate("mmc", ["p_wait"])["p_wait"]
    theirs = mean_ci(ciw_p_wait, 0.99)
    # The two 99% intervals overlap, and both hold the Erlang C value.
    assert ours[1] <= theirs[2] and theirs[1] <= ours[2], f"csr_marl {ours} vs ciw {theirs}"
    assert_within(theirs, erlang_c(4, LAMBDA * MEAN_SERVICE), "ciw P(wait)")
    assert not math.isnan(ours[0])
