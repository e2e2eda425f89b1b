"""Mean and confidence interval of each metric over replications."""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Sequence

from ..analysis import summarise
from .records import natural_range


class Estimate(NamedTuple):
    """A replication mean with its two-sided confidence interval and the number of values used."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def __str__(self) -> str:
        if math.isnan(self.mean):
            return "–"
        if math.isnan(self.low):
            return _number(self.mean)
        return f"{_number(self.mean)} [{_number(self.low)}, {_number(self.high)}]"


def _number(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def estimates(
    records: Sequence[Mapping[str, float]], names: Sequence[str], confidence: float = 0.95
) -> dict[str, Estimate]:
    """``{name: Estimate}`` for each metric in ``names`` over ``records`` (NaN values skipped).

    The Student-t interval is clipped to where the metric can lie (a share stays in [0, 1]). A share at
    0 or 1 in every replication (no spread, so no t interval) gets the exact interval of
    :func:`share_at_bound`, not [1, 1].
    """
    stats = summarise(records, confidence) if records else {}
    nan = {"mean": math.nan, "low": math.nan, "high": math.nan, "n": 0}
    out = {}
    for name in names:
        s = stats.get(name, nan)
        lowest, highest = natural_range(name)
        low, high = (max(s["low"], lowest), min(s["high"], highest)) if s["n"] > 1 else (s["low"], s["high"])
        if (lowest, highest) == (0.0, 1.0) and s["n"] > 0 and s["mean"] in (0.0, 1.0) and low == high:
            low, high = share_at_bound(s["mean"], s["n"], confidence)
        out[name] = Estimate(s["mean"], low, high, s["n"])
    return out


def share_at_bound(value: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for the mean of a share that was ``value`` (0 or 1) in all of
    ``n`` replications: ``[(alpha/2)^(1/n), 1]`` at 1, its mirror at 0. It holds for any share in
    [0, 1], not only a 0/1 outcome: P(share = 1) <= E[share], so n replications all at 1 have
    probability at most mean^n."""
    edge = ((1.0 - confidence) / 2.0) ** (1.0 / n)
    return (edge, 1.0) if value == 1.0 else (0.0, 1.0 - edge)
