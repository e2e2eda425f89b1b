"""The manager's score: what a day of the contact center earned, in money, from its KPIs.

A contact-center manager judges a day by what it cost and what it earned. The rates come from the
scenario's ``manager:`` block (``csr_marl.config.scenario.Manager``); the counts from a run's KPIs
(handled staff minutes per role, damage) and its per-class table (``SimulationResult.by_class``: per
priority x tier, resolutions, abandonment, SLA breaches and minutes waited). The lines:

* ``resolutions``: each resolved contact's value, by tier;
* ``staff_time``: each handled staff-minute at its role's fully loaded rate (a ticket in someone's hands);
* ``sla_breaches``, ``abandonment``, ``waiting``: each breach, each customer who hung up, each hour a
  customer waited in any queue, at its base amount x ``priority_weight[priority] * tier_weight[tier]``;
* ``damage``: each refund not owed and each specialist tool used on a contact that did not need it.

``total`` is their sum, the score a team is judged on. Rostered time nobody used (staff on shift with
nothing in hand) is a fixed cost of the staffing plan, not of the team's decisions: it is reported as
``idle_staff`` beside the score, and ``net`` (``total + idle_staff``) is the figure to compare staffing
plans by. Everything is computed here from the rates and the counts, independently of the reward code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

LINES: tuple[str, ...] = ("resolutions", "staff_time", "sla_breaches", "abandonment", "waiting", "damage")


class ManagerRates(Protocol):
    """The rates a score needs (``csr_marl.config.scenario.Manager`` has them)."""

    currency: str
    staff_per_hour: Mapping[str, float]
    resolution_value: Mapping[str, float]
    priority_weight: Mapping[str, float]
    tier_weight: Mapping[str, float]
    sla_breach: float
    abandonment: float
    waiting_per_hour: float
    collateral_damage: float
    wrong_specialist_work: float


@dataclass(frozen=True)
class ManagerScore:
    """A day's score, line by line, in ``currency`` (costs negative)."""

    currency: str
    lines: dict[str, float]
    idle_staff: float  # rostered minutes nobody used, at the roles' rates (negative; not in ``total``)

    @property
    def total(self) -> float:
        return float(sum(self.lines.values()))

    @property
    def net(self) -> float:
        """``total`` less the cost of idle rostered time: for comparing staffing plans."""
        return self.total + self.idle_staff

    def as_record(self) -> dict[str, float]:
        """Flat columns for tables: ``manager_score``, ``manager_net`` and one ``manager_<line>`` each."""
        return {"manager_score": self.total, "manager_net": self.net,
                **{f"manager_{line}": value for line, value in self.lines.items()}}


def manager_score(
    rates: ManagerRates, kpis: Mapping[str, float], by_class: Mapping[str, Mapping[str, float]]
) -> ManagerScore:
    """Score a run from its KPIs and its per-class table (``"priority/tier"`` -> counts and minutes)."""
    lines = dict.fromkeys(LINES, 0.0)
    for key, row in by_class.items():
        priority, tier = key.split("/")
        weight = rates.priority_weight[priority] * rates.tier_weight[tier]
        lines["resolutions"] += row["resolved"] * rates.resolution_value[tier]
        lines["sla_breaches"] -= row["sla_breached"] * rates.sla_breach * weight
        lines["abandonment"] -= row["abandoned"] * rates.abandonment * weight
        lines["waiting"] -= row["queue_minutes"] / 60.0 * rates.waiting_per_hour * weight
    idle = 0.0
    for role, per_hour in rates.staff_per_hour.items():
        handled = kpis.get(f"handled_minutes_{role}", 0.0)
        lines["staff_time"] -= handled / 60.0 * per_hour
        idle -= max(0.0, kpis.get(f"paid_minutes_{role}", handled) - handled) / 60.0 * per_hour
    lines["damage"] = -(
        kpis.get("collateral_damage", 0) * rates.collateral_damage
        + kpis.get("wrong_specialist_work", 0) * rates.wrong_specialist_work
    )
    return ManagerScore(rates.currency, lines, idle)


class _Scored(Protocol):
    kpis: Mapping[str, float]
    by_class: Mapping[str, Mapping[str, float]]


def score_result(result: _Scored, rates: ManagerRates) -> ManagerScore:
    """:func:`manager_score` of a ``SimulationResult`` (``rates``: its scenario's ``manager``)."""
    return manager_score(rates, result.kpis, result.by_class)


__all__ = ["LINES", "ManagerRates", "ManagerScore", "manager_score", "score_result"]
