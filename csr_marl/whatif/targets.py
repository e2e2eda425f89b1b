"""``--target KPI>=VALUE``: what a staffing level must achieve, and how a confidence interval settles it."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Callable, Literal

from .errors import StudyError
from .records import PROPORTIONS, check_metric
from .summary import Estimate

Verdict = Literal["met", "missed", "undecided"]
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
}
_PATTERN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(>=|<=|>|<)\s*([^\s<>=]+)\s*$")
EXAMPLE = 'e.g. "service_level>=0.8" or "abandonment_rate<=0.05"'


@dataclass(frozen=True)
class Target:
    """A KPI bound such as ``service_level >= 0.8``."""

    kpi: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.kpi}{self.op}{self.threshold:g}"

    @property
    def higher_is_better(self) -> bool:
        return self.op in (">=", ">")

    def satisfied(self, value: float) -> bool:
        """Whether ``value`` meets the bound (NaN never does)."""
        return not math.isnan(value) and _OPERATORS[self.op](value, self.threshold)

    def verdict(self, estimate: Estimate) -> Verdict:
        """``met`` when the whole confidence interval meets the bound, ``missed`` when none of it does.

        A KPI undefined in every replication (NaN mean, e.g. ASA when nobody was answered) is missed.
        """
        if math.isnan(estimate.mean):
            return "missed"
        if math.isnan(estimate.low) or math.isnan(estimate.high):
            return "undecided"
        low_ok, high_ok = self.satisfied(estimate.low), self.satisfied(estimate.high)
        if low_ok and high_ok:
            return "met"
        if not low_ok and not high_ok:
            return "missed"
        return "undecided"


def parse_target(text: str) -> Target:
    """Parse one ``--target``; raises :class:`StudyError` for a malformed, unknown or impossible bound."""
    match = _PATTERN.match(text)
    if not match:
        raise StudyError(f"--target {text!r}: expected KPI>=VALUE or KPI<=VALUE, {EXAMPLE}")
    kpi, op, raw = match.groups()
    check_metric(kpi, f"--target {text!r}")
    try:
        threshold = float(raw)
    except ValueError:
        raise StudyError(f"--target {text!r}: {raw!r} is not a number") from None
    if not math.isfinite(threshold):
        raise StudyError(f"--target {text!r}: the bound must be a finite number")
    target = Target(kpi, op, threshold)
    if kpi in PROPORTIONS and not (target.satisfied(0.0) or target.satisfied(1.0)):
        raise StudyError(f"--target {text!r}: impossible, {kpi} is a share between 0 and 1")
    return target


def parse_targets(texts: list[str] | tuple[str, ...] | None) -> tuple[Target, ...]:
    """Parse several ``--target`` options, rejecting a KPI bounded twice in the same direction."""
    targets = tuple(parse_target(text) for text in texts or ())
    seen: set[tuple[str, bool]] = set()
    for target in targets:
        key = (target.kpi, target.higher_is_better)
        if key in seen:
            raise StudyError(f"--target {target}: {target.kpi} is already bounded in that direction")
        seen.add(key)
    return targets
