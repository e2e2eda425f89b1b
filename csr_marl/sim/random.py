"""Independent random streams and fast buffered samplers.

One root seed spawns a stream per source of randomness (numpy ``SeedSequence.spawn``), so two staffing
variants run with the same seed see the same customers (common random numbers): arrivals, ticket content,
patience and handle times never borrow from each other or from the policy's stream.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Callable, Final

import numpy as np

from ..config.distributions import (
    Deterministic,
    Distribution,
    Empirical,
    Exponential,
    Gamma,
    Lognormal,
)

# Append only: a new stream must leave every earlier one's draws unchanged (spawned by index).
STREAMS: Final[tuple[str, ...]] = (
    "arrivals", "tickets", "patience", "handle_times", "returns", "policy", "dialogue", "text_noise",
    "illegal_fallback",  # the RL environments' replacement for an illegal action
)
BLOCK: Final = 512


def check_seed(seed: object) -> int | None:
    """``seed`` as a non-negative int (or None); a ValueError naming ``seed`` otherwise."""
    if seed is None:
        return None
    if isinstance(seed, (bool, float)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed: must be a non-negative integer or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed: must be a non-negative integer or None, got {seed}")
    return int(seed)


class RandomStreams:
    """Named, independent ``numpy.random.Generator`` streams derived from one root seed."""

    def __init__(self, seed: object) -> None:
        """``seed``: an int >= 0, a ``SeedSequence`` or None (fresh entropy); anything else raises."""
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(check_seed(seed))
        self.root = root
        children = root.spawn(len(STREAMS))
        self._generators = {name: np.random.default_rng(s) for name, s in zip(STREAMS, children)}

    def __getitem__(self, name: str) -> np.random.Generator:
        return self._generators[name]


class Sampler:
    """Draws from one distribution in blocks: one numpy call per 512 samples, not per sample."""

    __slots__ = ("_draw", "_buffer", "_index", "mean")

    def __init__(self, draw: Callable[[int], np.ndarray], mean: float) -> None:
        self._draw = draw
        self._buffer: list[float] = []
        self._index = BLOCK
        self.mean = mean

    def __call__(self) -> float:
        if self._index == BLOCK:
            self._buffer = self._draw(BLOCK).tolist()
            self._index = 0
        value = self._buffer[self._index]
        self._index += 1
        return value


def make_sampler(dist: Distribution, rng: np.random.Generator) -> Sampler:
    """A buffered sampler for a declared distribution, drawing from ``rng``."""
    if isinstance(dist, Exponential):
        scale = dist.mean_minutes
        return Sampler(lambda n: rng.exponential(scale, n), dist.mean)
    if isinstance(dist, Lognormal):
        mu, sigma = dist.log_params
        return Sampler(lambda n: rng.lognormal(mu, sigma, n), dist.mean)
    if isinstance(dist, Gamma):
        shape, scale = dist.shape_scale
        return Sampler(lambda n: rng.gamma(shape, scale, n), dist.mean)
    if isinstance(dist, Deterministic):
        value = dist.mean_minutes
        return Sampler(lambda n: np.full(n, value), dist.mean)
    if isinstance(dist, Empirical):
        values = np.asarray(dist.values, dtype=float)
        probabilities = np.asarray(dist.probabilities)
        return Sampler(lambda n: rng.choice(values, size=n, p=probabilities), dist.mean)
    raise TypeError(f"no sampler for {type(dist).__name__}")


def infinite_sampler() -> Sampler:
    """A sampler that always returns infinity (nobody abandons)."""
    return Sampler(lambda n: np.full(n, math.inf), math.inf)


class UniformStream:
    """Buffered uniform(0, 1) draws for frequent small choices."""

    __slots__ = ("_rng", "_buffer", "_index")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[float] = []
        self._index = BLOCK

    def __call__(self) -> float:
        if self._index == BLOCK:
            self._buffer = self._rng.random(BLOCK).tolist()
            self._index = 0
        value = self._buffer[self._index]
        self._index += 1
        return value

    def choice(self, cumulative: list[float]) -> int:
        """Index drawn by cumulative weights (last entry 1.0): the first whose edge exceeds the draw."""
        i = bisect_right(cumulative, self())
        return i if i < len(cumulative) else len(cumulative) - 1

    def integer(self, n: int) -> int:
        return min(int(self() * n), n - 1)


def cumulative(weights: list[float]) -> list[float]:
    total = float(sum(weights))
    acc, out = 0.0, []
    for w in weights:
        acc += w / total
        out.append(acc)
    out[-1] = 1.0
    return out
