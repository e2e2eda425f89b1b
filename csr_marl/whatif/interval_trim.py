"""Holding the target in every interval: the iterative plan trimmed in steps of a third of an interval.

The iterative staffing algorithm's rule is conservative for an interval target: it staffs for the
busiest of the interval's sample minutes, and a whole agent in a 30-minute block can move an interval's
service level by 0.1 or more. So its plan meets the target everywhere, but well above it in most
intervals. The trim pass holds each interval near the target instead:

1. Each interval's headcount is split into thirds (a 30-minute interval staffs its three 10-minute
   steps separately), so the plan can move by a third of an agent-interval.
2. Simulate the plan and the plan with one agent fewer in every step (common random numbers). Per
   interval, the difference of the two service levels is the *one-agent effect* ``effect``.
3. Where the service level lies above ``target + aim``, remove as many third-agents as the excess
   allows (``excess / (effect / 3)``); where it lies below, add them back the same way. The first
   passes run a quarter of the replications and move up to two agents; once a pass moves no more
   steps than there are intervals, every pass runs all ``replications`` and moves one agent at most.
   Repeat until no step moves, or ``passes``.

Every interval then meets the target (its mean, with ``aim`` of room for noise) and lies within a
third of an agent's effect above ``target + aim``: within 0.05 of the target wherever one agent
moves it by less than 0.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..config.scenario import Scenario
from .interval_runs import run_interval_replications, scenario_with_plan
from .summary import Estimate, estimates

Report = Callable[[str], None]
STEPS = 3  # staffing steps per interval
#: The trim's replications start at this index, and every pass draws fresh ones: a plan tuned pass
#: after pass to one sample's noise would look better on it than it is, and the check that follows
#: (indices 0, 1, ...) judges the trimmed plan on customers the trim never saw.
TRIM_FIRST = 1_000_000


@dataclass(frozen=True)
class Trim:
    """The trimmed plan (headcount per step per role), its check and each interval's one-agent effect."""

    steps: dict[str, list[int]]  # headcount per staffing step (a third of an interval)
    levels: dict[str, list[Estimate]]  # service level per interval, at the trimmed plan
    effect: dict[str, list[float]]  # service level lost per interval with one agent fewer (in both steps)
    passes: int
    replications: int
    converged: bool = True  # False when the last pass still moved a step (noise near the target)

    def per_interval(self, role: str) -> list[float]:
        """Mean headcount per interval over its steps (41.33: 41 in two steps, 42 in one)."""
        steps = self.steps[role]
        return [sum(steps[k:k + STEPS]) / STEPS for k in range(0, len(steps), STEPS)]

    def covering(self, role: str) -> list[int]:
        """Whole headcount per interval covering all its steps (what an interval-grid schedule must staff)."""
        steps = self.steps[role]
        return [max(steps[k:k + STEPS]) for k in range(0, len(steps), STEPS)]


def split(plan: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """A per-interval plan as counts per staffing step (a third of an interval)."""
    return {role: [int(n) for n in counts for _ in range(STEPS)] for role, counts in plan.items()}


def scenario_with_steps(base: Scenario, steps: Mapping[str, Sequence[int]]) -> Scenario:
    """``base`` staffed by ``steps`` (a shift change every step, a third of an interval); KPIs per interval."""
    step = base.service_level.interval_minutes / STEPS
    count = len(next(iter(steps.values()))) if steps else 0
    return scenario_with_plan(base, steps, [k * step for k in range(count)])


def interval_levels(scenario: Scenario, roles: Sequence[str], policy: str, seed: int, replications: int,
                    executor: Any, first: int = 0) -> dict[str, list[Estimate]]:
    """Each role's queue service level per interval, mean and 95% CI over ``replications`` (from index ``first``)."""
    runs = run_interval_replications(scenario, policy, seed, replications, executor, first=first)
    tables = [run.intervals for run in runs]
    count = min(len(t) for t in tables)
    names = [f"service_level_{role}" for role in roles]
    rows = [estimates([t[k] for t in tables], names) for k in range(count)]
    return {role: [row[f"service_level_{role}"] for row in rows] for role in roles}


def hold_target(
    base: Scenario, plan: Mapping[str, Sequence[int]], roles: Sequence[str], target: float, policy: str, seed: int,
    replications: int, executor: Any, *, passes: int = 12, aim: float = 0.015, report: Report | None = None,
) -> Trim:
    """Trim ``plan`` until every interval holds ``target`` (see the module docstring)."""
    say = report or (lambda message: None)
    steps = split(plan)
    coarse = True  # early passes: a quarter of the replications, up to two agents a pass
    done, moved = 0, 0
    for done in range(1, passes + 1):
        runs = max(replications // 4, 4) if coarse else replications
        at, effect = _levels_and_effect(base, steps, roles, policy, seed, runs, executor, TRIM_FIRST + done * replications)
        moved = 0
        for role in roles:
            for k, (level, lost) in enumerate(zip(at[role], effect[role])):
                step = _steps_to_move(level.mean, lost, target, aim, 2 * STEPS if coarse else STEPS)
                moved += abs(step)
                _move(steps[role], k, step)
        say(f"trim pass {done} ({runs} replications): moved {moved} third(s) of an agent; " + "; ".join(
            f"{role} service level {min(e.mean for e in at[role]):.3f}-{max(e.mean for e in at[role]):.3f}" for role in roles))
        if coarse and moved <= sum(len(at[role]) for role in roles):  # about a third of an agent per interval
            coarse = False
        elif not coarse and not moved:
            return Trim(steps, at, effect, done, runs)
    at, effect = _levels_and_effect(base, steps, roles, policy, seed, replications, executor,
                                    TRIM_FIRST + (done + 1) * replications)
    return Trim(steps, at, effect, done, replications, converged=False)


def _levels_and_effect(base: Scenario, steps: Mapping[str, Sequence[int]], roles: Sequence[str], policy: str,
                       seed: int, replications: int, executor: Any,
                       first: int) -> tuple[dict[str, list[Estimate]], dict[str, list[float]]]:
    """Service level per interval at ``steps``, and what one agent fewer in every step costs it (CRN)."""
    at = interval_levels(scenario_with_steps(base, steps), roles, policy, seed, replications, executor, first)
    fewer_plan = {role: [max(n - 1, 0) for n in counts] for role, counts in steps.items()}
    fewer = interval_levels(scenario_with_steps(base, fewer_plan), roles, policy, seed, replications, executor, first)
    return at, {role: [_difference(a, f) for a, f in zip(at[role], fewer[role])] for role in roles}


def _difference(at: Estimate, fewer: Estimate) -> float:
    if math.isnan(at.mean) or math.isnan(fewer.mean):
        return math.nan
    return max(at.mean - fewer.mean, 0.0)


def _steps_to_move(level: float, effect: float, target: float, aim: float, most: int) -> int:
    """Steps (thirds of an agent) to add (> 0) or remove (< 0) in one interval, at most ``most``."""
    if math.isnan(level) or math.isnan(effect):
        return 0
    unit = max(effect, 0.005) / STEPS  # service level per step
    excess = level - (target + aim)
    if excess >= 0:
        return -min(most, math.floor(excess / unit))
    return min(most, math.ceil(-excess / unit))


def _move(steps: list[int], k: int, step: int) -> None:
    """Add ``step`` steps to interval ``k`` (remove when negative), evening its thirds."""
    cells = range(k * STEPS, (k + 1) * STEPS)
    for _ in range(abs(step)):
        if step > 0:
            i = min(cells, key=lambda c: (steps[c], c))
            steps[i] += 1
        else:
            i = max(cells, key=lambda c: (steps[c], c))
            if steps[i] > 0:
                steps[i] -= 1
