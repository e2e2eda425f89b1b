"""Distributions sample what they declare; streams are independent and reproducible."""

from __future__ import annotations

import numpy as np
import pytest

from csr_marl.analysis import mean_ci
from csr_marl.config.distributions import Deterministic, Empirical, Exponential, Gamma, Lognormal
from csr_marl.sim.random import RandomStreams, make_sampler


@pytest.mark.parametrize(
    "dist",
    [
        Exponential(dist="exponential", mean_minutes=3.0),
        Lognormal(dist="lognormal", mean_minutes=2.0, cv=0.8),
        Gamma(dist="gamma", mean_minutes=5.0, cv=0.5),
        Deterministic(dist="deterministic", mean_minutes=1.5),
        Empirical(dist="empirical", values=[1.0, 2.0, 10.0], weights=[3, 1, 1]),
    ],
)
def test_sampler_mean_matches_the_declared_mean(dist) -> None:
    sample = make_sampler(dist, np.random.default_rng(0))
    draws = [sample() for _ in range(20_000)]
    mean, low, high = mean_ci(draws, 0.99)
    assert low <= dist.mean <= high or np.std(draws) == 0 and mean == dist.mean
    assert min(draws) >= 0


def test_lognormal_cv_is_respected() -> None:
    sample = make_sampler(Lognormal(dist="lognormal", mean_minutes=2.0, cv=0.5), np.random.default_rng(1))
    draws = np.array([sample() for _ in range(50_000)])
    assert draws.std() / draws.mean() == pytest.approx(0.5, rel=0.05)


def test_empirical_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="weights has 1 entries but values has 2"):
        Empirical(dist="empirical", values=[1, 2], weights=[1])


def test_streams_are_independent_and_reproducible() -> None:
    a, b = RandomStreams(5), RandomStreams(5)
    assert a["arrivals"].random() == b["arrivals"].random()
    # Drawing from one stream does not shift another (common random numbers).
    c = RandomStreams(5)
    c["policy"].random(1000)
    assert c["patience"].random() == RandomStreams(5)["patience"].random()
    assert RandomStreams(6)["arrivals"].random() != RandomStreams(5)["arrivals"].random()
