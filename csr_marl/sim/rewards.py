"""The reward ledger: every reward component, who earned it, and the running team total.

The core records components as they happen, with the responsible agent (``None`` for team-wide ones
such as waiting and abandonment). The PettingZoo adapter turns entries into per-agent rewards according
to the reward mode; ``simulate`` reports the totals as the team return.
"""

from __future__ import annotations

from typing import Final

from ..config.domain import PRIORITIES

COMPONENTS: Final[tuple[str, ...]] = (
    "classification", "priority", "routing", "step", "resolution", "waiting", "abandonment",
    "sla_breach", "illegal_action", "response",
)


class RewardLedger:
    def __init__(self, track_entries: bool = False) -> None:
        self.totals: dict[str, float] = dict.fromkeys(COMPONENTS, 0.0)
        self.track_entries = track_entries
        self.entries: list[tuple[str, str | None, float]] = []

    def add(self, component: str, value: float, agent: str | None = None) -> None:
        if value:
            self.totals[component] = self.totals[component] + value
            if self.track_entries:
                self.entries.append((component, agent, value))

    def drain(self) -> list[tuple[str, str | None, float]]:
        entries, self.entries = self.entries, []
        return entries

    @property
    def team_return(self) -> float:
        return sum(self.totals.values())


class WaitingMeter:
    """Integrates the waiting cost: sum over waiting tickets of the per-minute weight of their priority."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.weight = {p: weights.get(p, 0.0) for p in PRIORITIES}
        self.rate = 0.0  # current cost per minute
        self.last = 0.0
        self.pending = 0.0

    def change(self, now: float, delta_rate: float) -> None:
        self.pending += self.rate * (now - self.last)
        self.last = now
        self.rate += delta_rate

    def refund(self, weight: float, minutes: float) -> None:
        """Take back cost charged for a ticket after it had already abandoned."""
        self.pending -= weight * minutes

    def collect(self, now: float) -> float:
        self.pending += self.rate * (now - self.last)
        self.last = now
        value, self.pending = self.pending, 0.0
        return value
