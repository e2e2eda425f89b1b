"""Does the team reward order teams as their manager would? Scripted teams, honest and not, on the same days.

Every team plays the same days (seeds: the same customers, common random numbers). For each team the
suite keeps, per day, the team return (the shared reward summed over the day) and the manager's score
(:mod:`csr_marl.analysis.manager_score`); against a reference team (the heuristic) it reports the
paired difference per day and its 95% t-interval, and across teams the Kendall rank correlation
between the mean team return and the mean manager's score.

The targets (:meth:`SuiteRun.failures`): every shortcut's team return is below the reference's (the
paired interval's upper end below zero); Kendall's tau-b between the two orders is at least 0.9; and
no shortcut's mean return ranks above an honest team that beats it on the manager's score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.manager_score import score_result
from ..analysis.stats import mean_ci
from ..config.loading import load_scenario
from ..policies.shortcuts import SHORTCUTS
from ..simulation import simulate

HONEST: tuple[str, ...] = (
    "heuristic", "expert", "fifo", "newest_first", "text_classifier", "text_classifier_overflow", "random",
)
TEAMS: tuple[str, ...] = (*HONEST, *SHORTCUTS)
REFERENCE = "heuristic"
#: The three settings: standard_day as written, with a spare desk, and the sale day's surge.
SETTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    "standard_day": ("standard_day", {}),
    "standard_day_spare_desk": ("standard_day", {"staffing.escalation": 6}),
    "surge": ("surge", {}),
}
TAU_TARGET = 0.9


@dataclass
class SuiteRun:
    """Per team, per day: the team return and the manager's score."""

    setting: str
    seeds: list[int]
    returns: dict[str, list[float]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)

    def mean(self, table: Mapping[str, list[float]], team: str) -> float:
        return float(sum(table[team]) / len(table[team]))

    def paired(self, table: Mapping[str, list[float]], team: str) -> tuple[float, float, float]:
        """``team`` minus the reference, day by day: (mean, low, high), 95% t-interval."""
        diffs = [a - b for a, b in zip(table[team], table[REFERENCE])]
        if all(d == diffs[0] for d in diffs):  # the same play every day: no spread to estimate
            return diffs[0], diffs[0], diffs[0]
        return mean_ci(diffs)

    def tau(self) -> float:
        teams = list(self.returns)
        return kendall_tau([self.mean(self.returns, t) for t in teams], [self.mean(self.scores, t) for t in teams])

    def failures(self) -> list[str]:
        """The targets that fail here (empty: all are met)."""
        failed = []
        for team in self.returns:
            if team in SHORTCUTS and self.paired(self.returns, team)[2] >= 0.0:
                failed.append(f"{team}'s team return is not below {REFERENCE}'s")
        tau = self.tau()
        if not tau >= TAU_TARGET:
            failed.append(f"Kendall tau {tau:.3f} < {TAU_TARGET}")
        for cheat in (t for t in self.returns if t in SHORTCUTS):
            for honest in (t for t in self.returns if t in HONEST):
                if (self.mean(self.scores, honest) > self.mean(self.scores, cheat)
                        and self.mean(self.returns, cheat) > self.mean(self.returns, honest)):
                    failed.append(f"{cheat} ranks above {honest} on team return but loses to it on the manager's score")
        return failed


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two paired sequences (ties in either order count as neither agreeing nor not)."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def run_suite(
    setting: str, seeds: Sequence[int], teams: Sequence[str] = TEAMS, overrides: Mapping[str, Any] | None = None
) -> SuiteRun:
    """Play every team of ``teams`` on the days ``seeds`` of ``setting`` (a key of :data:`SETTINGS`);
    ``overrides`` change the setting further (e.g. a shorter day)."""
    name, base = SETTINGS[setting]
    scenario = load_scenario(name, {**base, **(overrides or {})})
    run = SuiteRun(setting, list(seeds))
    for team in teams:
        returns, scores = run.returns.setdefault(team, []), run.scores.setdefault(team, [])
        for seed in seeds:
            result = simulate(scenario, policy=team, seed=seed)
            returns.append(result.team_return)
            scores.append(score_result(result, scenario.manager).total)
    return run


__all__ = ["HONEST", "REFERENCE", "SETTINGS", "TEAMS", "SuiteRun", "kendall_tau", "run_suite"]
