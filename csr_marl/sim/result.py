"""The outcome of one simulated run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SimulationResult:
    """KPIs (flat, see ``csr_marl.sim.kpis.KPI_DEFINITIONS``), breakdowns, rewards, the ticket log and
    the KPIs per interval of the day (``intervals``, ``interval_minutes`` wide)."""

    scenario: str
    seed: int | np.random.SeedSequence | None  # what the run was seeded with (studies: a replication's sequence)
    end_minute: float
    kpis: dict[str, int | float]
    breakdown: dict[str, dict[str, dict[str, int | float]]]
    reward_components: dict[str, float]
    flow: dict[str, int]
    log: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: KPIs per interval of the day, one flat row each (see csr_marl.sim.intervals.interval_definitions).
    intervals: list[dict[str, int | float]] = field(default_factory=list, repr=False)
    interval_minutes: float = 30.0
    #: Per class of customer ("priority/tier"): offered, resolved, abandoned, SLA breaches, minutes waited.
    by_class: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # Every undefined value is the one ``math.nan`` object. Dicts compare values by identity first,
        # so two results with the same figures compare equal, NaNs included, however they were
        # computed (the compiled core makes a new float object for each NaN it returns).
        tables = [self.kpis, self.reward_components, *self.intervals]
        tables += [row for rows in self.breakdown.values() for row in rows.values()]
        for table in tables:
            for key, value in table.items():
                if value != value:
                    table[key] = math.nan

    @property
    def team_return(self) -> float:
        """Sum of every reward component over the run (the shared team reward)."""
        return float(sum(self.reward_components.values()))

    def as_record(self) -> dict[str, Any]:
        """One flat row for tables: scenario, seed, team return and every KPI."""
        return {"scenario": self.scenario, "seed": self.seed, "team_return": self.team_return, **self.kpis}
