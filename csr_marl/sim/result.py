"""The outcome of one simulated run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SimulationResult:
    """KPIs (flat, see ``csr_marl.sim.kpis.KPI_DEFINITIONS``), breakdowns, rewards, the ticket log and
    the KPIs per interval of the day (``intervals``, ``interval_minutes`` wide)."""

    scenario: str
    seed: int | None
    end_minute: float
    kpis: dict[str, float]
    breakdown: dict[str, dict[str, dict[str, float]]]
    reward_components: dict[str, float]
    flow: dict[str, int]
    log: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: KPIs per interval of the day, one flat row each (see csr_marl.sim.intervals.interval_definitions).
    intervals: list[dict[str, float]] = field(default_factory=list, repr=False)
    interval_minutes: float = 30.0

    @property
    def team_return(self) -> float:
        """Sum of every reward component over the run (the shared team reward)."""
        return float(sum(self.reward_components.values()))

    def as_record(self) -> dict[str, Any]:
        """One flat row for tables: scenario, seed, team return and every KPI."""
        return {"scenario": self.scenario, "seed": self.seed, "team_return": self.team_return, **self.kpis}
