"""The reward ledger: every reward component, who earned it, and the running team total.

The core records components as they happen, with the responsible agent (``None`` for team-wide ones
such as waiting and abandonment). The PettingZoo adapter turns entries into per-agent rewards according
to the reward mode; ``simulate`` reports the totals as the team return.

Components are of two kinds. The *priced* ones (:data:`PRICED`: resolution, waiting, abandonment,
sla_breach, staff_time, damage) are, with ``rewards.pricing: manager``, the manager's rates times
``rewards.score_scale``, booked as each cost or value falls due: over a day they sum to ``score_scale``
times the manager's score. The *shaping* ones (:data:`SHAPING`: classification, priority, routing, step,
response, illegal_action) reward the right decision at the moment it is taken; they are where a day's
team return and the scaled score differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..config.domain import ROLES
from ..config.scenario import Scenario
from .tickets import CELLS

COMPONENTS: Final[tuple[str, ...]] = (
    "classification", "priority", "routing", "step", "resolution", "waiting", "abandonment",
    "sla_breach", "illegal_action", "response", "staff_time", "damage",
)
PRICED: Final[tuple[str, ...]] = ("resolution", "waiting", "abandonment", "sla_breach", "staff_time", "damage")
SHAPING: Final[tuple[str, ...]] = tuple(c for c in COMPONENTS if c not in PRICED)


@dataclass(frozen=True)
class Prices:
    """The priced components' amounts in reward points: per customer class (a ticket's ``cell``) and role."""

    resolution: list[float]  # a resolution, by cell
    abandonment: list[float]  # an abandoned contact (negative), by cell
    sla_breach: list[float]  # a contact closed or left past its SLA (negative), by cell
    waiting: list[float]  # a minute in a queue (negative), by cell
    staff_minute: dict[str, float]  # a minute of handled work (negative), by role
    collateral_damage: float  # a refund not owed (negative)
    wrong_specialist_work: float  # a specialist tool the case does not need (negative)

    @classmethod
    def of(cls, scenario: Scenario) -> "Prices":
        w = scenario.rewards
        if w.pricing == "flat":  # the seeds' fixed weights: by tier, by priority or flat; no staff time
            return cls(
                [w.resolution * w.tier_weight.get(tier, 1.0) for _, tier in CELLS],
                [w.abandonment] * len(CELLS),
                [w.sla_breach] * len(CELLS),
                [w.waiting_per_minute.get(priority, 0.0) for priority, _ in CELLS],
                dict.fromkeys(ROLES, 0.0),
                w.collateral_damage,
                0.0,
            )
        m, scale = scenario.manager, w.score_scale
        weight = [m.class_weight(priority, tier) * scale for priority, tier in CELLS]
        return cls(
            [m.resolution_value[tier] * scale for _, tier in CELLS],
            [-m.abandonment * c for c in weight],
            [-m.sla_breach * c for c in weight],
            [-m.waiting_per_hour / 60.0 * c for c in weight],
            {role: -rate / 60.0 * scale for role, rate in m.staff_per_hour.items()},
            -m.collateral_damage * scale,
            -m.wrong_specialist_work * scale,
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
    """Integrates the waiting cost: sum over waiting tickets of the per-minute weight of their class."""

    def __init__(self, weights: list[float]) -> None:
        self.weight = weights  # by cell
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
