"""Holding the target in every interval: the iterative plan trimmed in half-interval steps.

The iterative staffing algorithm's rule is conservative for an interval target: it staffs for the
busiest of the interval's sample minutes, and a whole agent in a 30-minute block can move an interval's
service level by 0.1 or more. So its plan meets the target everywhere, but well above it in most
intervals. The trim pass holds each interval near the target instead:

1. Each interval's headcount is split into its two halves (a 30-minute interval staffs its two
   quarter-hours separately), so the plan can move by half an agent-interval.
2. Simulate the plan and the plan with one agent fewer in every half (common random numbers). Per
   interval, the difference of the two service levels is the *one-agent effect* ``effect``.
3. Where the service level lies above ``target + aim``, remove as many half-agents as the excess
   allows (``excess / (effect / 2)``); where it lies below, add them back the same way. The first
   passes run a quarter of the replications and move up to two agents; once a pass moves fewer
   half-agents than half the intervals, every pass runs all ``replications`` and moves one agent at
   most. Repeat until no half moves, or ``passes``.

Every interval then meets the target (its mean, with ``aim`` of room for noise) and lies within half
an agent's effect of it: within 0.05 wherever one agent moves it by less than 0.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..config.loading import load_scenario
from ..config.scenario import Scenario
from .interval_runs import run_interval_replications, scenario_with_plan
from .summary import Estimate, estimates

Report = Callable[[str], None]
HALVES = 2


@dataclass(frozen=True)
class Trim:
    """The trimmed plan (headcount per half-interval per role), its check and each interval's one-agent effect."""

    halves: dict[str, list[int]]
    levels: dict[str, list[Estimate]]  # service level per interval, at the trimmed plan
    effect: dict[str, list[float]]  # service level lost per interval with one agent fewer (in both halves)
    passes: int
    replications: int

    def per_interval(self, role: str) -> list[float]:
        """Mean headcount per interval (a half-agent shows as .5)."""
        halves = self.halves[role]
        return [sum(halves[k:k + HALVES]) / HALVES for k in range(0, len(halves), HALVES)]

    def covering(self, role: str) -> list[int]:
        """Whole headcount per interval covering both halves (what an interval-grid schedule must staff)."""
        halves = self.halves[role]
        return [max(halves[k:k + HALVES]) for k in range(0, len(halves), HALVES)]


def split(plan: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """A per-interval plan as per-half-interval counts."""
    return {role: [int(n) for n in counts for _ in range(HALVES)] for role, counts in plan.items()}


def scenario_with_halves(base: Scenario, halves: Mapping[str, Sequence[int]]) -> Scenario:
    """``base`` staffed by ``halves`` (shift changes every half interval), its KPIs still per interval."""
    width = base.service_level.interval_minutes
    fine = load_scenario(base, {"service_level.interval_minutes": _half(width)})
    staffed = scenario_with_plan(fine, halves)
    return load_scenario(staffed, {"service_level.interval_minutes": width})


def holds(base: Scenario) -> bool:
    """Whether the trim pass can halve ``base``'s intervals (30 or 60 minutes)."""
    width = base.service_level.interval_minutes
    return _half(width) != width


def _half(width: int) -> int:
    return width // HALVES if width // HALVES in (15, 30) else width  # the interval choices a scenario takes


def interval_levels(scenario: Scenario, roles: Sequence[str], policy: str, seed: int, replications: int,
                    executor: Any) -> dict[str, list[Estimate]]:
    """Each role's queue service level per interval, mean and 95% CI over ``replications``."""
    runs = run_interval_replications(scenario, policy, seed, replications, executor)
    tables = [run.intervals for run in runs]
    count = min(len(t) for t in tables)
    names = [f"service_level_{role}" for role in roles]
    rows = [estimates([t[k] for t in tables], names) for k in range(count)]
    return {role: [row[f"service_level_{role}"] for row in rows] for role in roles}


def hold_target(
    base: Scenario, plan: Mapping[str, Sequence[int]], roles: Sequence[str], target: float, policy: str, seed: int,
    replications: int, executor: Any, *, passes: int = 8, aim: float = 0.01, report: Report | None = None,
) -> Trim:
    """Trim ``plan`` until every interval holds ``target`` (see the module docstring)."""
    say = report or (lambda message: None)
    if not holds(base):
        raise ValueError("the trim pass halves 30- or 60-minute intervals")
    halves = split(plan)
    coarse = True  # early passes: a quarter of the replications, up to two agents a pass
    done, moved = 0, 0
    for done in range(1, passes + 1):
        runs = max(replications // 4, 4) if coarse else replications
        at, effect = _levels_and_effect(base, halves, roles, policy, seed, runs, executor)
        moved = 0
        for role in roles:
            for k, (level, lost) in enumerate(zip(at[role], effect[role])):
                step = _half_agents(level.mean, lost, target, aim, 2 * HALVES if coarse else HALVES)
                moved += abs(step)
                _move(halves[role], k, step)
        say(f"trim pass {done} ({runs} replications): moved {moved} half-agent(s); " + "; ".join(
            f"{role} service level {min(e.mean for e in at[role]):.3f}-{max(e.mean for e in at[role]):.3f}" for role in roles))
        if coarse and moved <= sum(len(at[role]) for role in roles) // 2:
            coarse = False
        elif not coarse and not moved:
            return Trim(halves, at, effect, done, runs)
    at, effect = _levels_and_effect(base, halves, roles, policy, seed, replications, executor)
    return Trim(halves, at, effect, done, replications)


def _levels_and_effect(base: Scenario, halves: Mapping[str, Sequence[int]], roles: Sequence[str], policy: str,
                       seed: int, replications: int, executor: Any) -> tuple[dict[str, list[Estimate]], dict[str, list[float]]]:
    """Service level per interval at ``halves``, and what one agent fewer in every half costs it (CRN)."""
    at = interval_levels(scenario_with_halves(base, halves), roles, policy, seed, replications, executor)
    fewer_plan = {role: [max(n - 1, 0) for n in counts] for role, counts in halves.items()}
    fewer = interval_levels(scenario_with_halves(base, fewer_plan), roles, policy, seed, replications, executor)
    return at, {role: [_difference(a, f) for a, f in zip(at[role], fewer[role])] for role in roles}


def _difference(at: Estimate, fewer: Estimate) -> float:
    if math.isnan(at.mean) or math.isnan(fewer.mean):
        return math.nan
    return max(at.mean - fewer.mean, 0.0)


def _half_agents(level: float, effect: float, target: float, aim: float, most: int) -> int:
    """Half-agents to add (> 0) or remove (< 0) in one interval, at most ``most``."""
    if math.isnan(level) or math.isnan(effect):
        return 0
    unit = max(effect, 0.005) / HALVES  # service level per half-agent
    excess = level - (target + aim)
    if excess >= 0:
        return -min(most, math.floor(excess / unit))
    return min(most, math.ceil(-excess / unit))


def _move(halves: list[int], k: int, step: int) -> None:
    """Add ``step`` half-agents to interval ``k`` (remove when negative), evening its halves."""
    cells = range(k * HALVES, (k + 1) * HALVES)
    for _ in range(abs(step)):
        if step > 0:
            i = min(cells, key=lambda c: (halves[c], c))
            halves[i] += 1
        else:
            i = max(cells, key=lambda c: (halves[c], c))
            if halves[i] > 0:
                halves[i] -= 1
