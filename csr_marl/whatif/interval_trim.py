"""Holding the target in every interval: the iterative plan trimmed in steps of a sixth of an interval.

The iterative staffing algorithm's rule is conservative for an interval target: it staffs for the
busiest of the interval's sample minutes, and a whole agent in a 30-minute block can move an interval's
service level by 0.1 or more. So its plan meets the target everywhere, but well above it in most
intervals. The trim pass holds each interval near the target instead:

1. Each interval's headcount is split into sixths (a 30-minute interval staffs its six 5-minute steps
   separately), so the plan can move by a sixth of an agent-interval.
2. Simulate the plan and the plan with one agent fewer in every step (common random numbers). Per
   interval, the difference of the two service levels is the *one-agent effect* ``effect``.
3. Where the service level lies above ``target + aim``, remove as many sixth-agents as the excess
   allows (``excess / (effect / 6)``); where it lies below, add them back the same way. The first
   passes run a quarter of the replications and move up to two agents; once a pass moves half an
   agent per interval or less (or after four), every pass runs all ``replications`` and moves one
   agent at most.
   Repeat until no step moves, or ``passes``.
4. **Secure** the plan: simulate the whole plan on fresh replications, doubling them (from
   ``replications`` up to ``verify``) while some interval's 95% CI straddles the target. An interval
   whose CI does not lie wholly above the target, or whose mean lies under ``target + aim``, gets
   steps back (enough to lift its mean to ``target + aim``, or to the target plus its CI's
   half-width if that is more; at least one step);
   one whose mean, and CI, would still clear them with a step fewer loses that step, unless this
   stage has already added to it. The whole plan is simulated again on the same days (the step
   added to one interval also shortens the queue the next one inherits), until a round moves
   nothing, or ``rounds``.

Trimming judges each interval on a few hundred days, where one half-hour's service level varies from
day to day by about 0.35, and all intervals move at once; so its last pass leaves some intervals
0.02-0.05 under what it judged. The secure stage is what makes every interval meet the target with
its CI (on ``verify`` replications at most), each within about a sixth of an agent's effect above
``target + aim``: within 0.05 of the target wherever one agent moves it by less than 0.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..config.scenario import Scenario
from .interval_runs import run_interval_replications, scenario_with_plan
from .summary import Estimate, estimates

Report = Callable[[str], None]
STEPS = 6  # staffing steps per interval
#: The trim's replications start at this index, and every pass draws fresh ones: a plan tuned pass
#: after pass to one sample's noise would look better on it than it is, and the check that follows
#: (indices 0, 1, ...) judges the trimmed plan on customers the trim never saw.
TRIM_FIRST = 1_000_000
#: The secure stage's replications start here (never the trim's or the check's). Every round simulates
#: the same days (common random numbers): an interval no step has reached keeps its estimate, so noise
#: alone never moves it again; the check that follows judges the plan on other days.
SECURE_FIRST = 50_000_000
#: The trim's coarse passes end once a pass moves at most this many steps per interval (half an agent:
#: a quarter of the replications pins a service level to about +-0.05, some three steps), or after
#: ``COARSE_PASSES`` passes.
COARSE_SETTLED = STEPS // 2
COARSE_PASSES = 4


@dataclass(frozen=True)
class Trim:
    """The trimmed plan (headcount per step per role), its check and each interval's one-agent effect."""

    steps: dict[str, list[int]]  # headcount per staffing step (a sixth of an interval)
    levels: dict[str, list[Estimate]]  # service level per interval at the final plan (the secure stage's last round)
    effect: dict[str, list[float]]  # service level lost per interval with one agent fewer (in all its steps)
    passes: int  # trim passes
    replications: int  # replications of the trim's last pass
    converged: bool = True  # False when the trim's last pass still moved a step (noise near the target)
    rounds: int = 0  # secure rounds (whole-plan simulations); 0 when the stage did not run
    verified: int = 0  # replications of the secure stage's last round (what ``levels`` rests on)
    secured: bool = True  # False when the secure stage still moved a step at its last round

    def per_interval(self, role: str) -> list[float]:
        """Mean headcount per interval over its steps (41.5: 41 in three steps, 42 in three)."""
        steps = self.steps[role]
        return [sum(steps[k:k + STEPS]) / STEPS for k in range(0, len(steps), STEPS)]

    def covering(self, role: str) -> list[int]:
        """Whole headcount per interval covering all its steps (what an interval-grid schedule must staff)."""
        steps = self.steps[role]
        return [max(steps[k:k + STEPS]) for k in range(0, len(steps), STEPS)]


def split(plan: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """A per-interval plan as counts per staffing step (a sixth of an interval)."""
    return {role: [int(n) for n in counts for _ in range(STEPS)] for role, counts in plan.items()}


def scenario_with_steps(base: Scenario, steps: Mapping[str, Sequence[int]]) -> Scenario:
    """``base`` staffed by ``steps`` (a shift change every step, a sixth of an interval); KPIs per interval."""
    step = base.service_level.interval_minutes / STEPS
    count = len(next(iter(steps.values()))) if steps else 0
    return scenario_with_plan(base, steps, [k * step for k in range(count)])


def interval_levels(scenario: Scenario, roles: Sequence[str], policy: str, seed: int, replications: int,
                    executor: Any, first: int = 0) -> dict[str, list[Estimate]]:
    """Each role's queue service level per interval, mean and 95% CI over ``replications`` (from index ``first``)."""
    return _service_levels(run_interval_replications(scenario, policy, seed, replications, executor, first=first), roles)


def hold_target(
    base: Scenario, plan: Mapping[str, Sequence[int]], roles: Sequence[str], target: float, policy: str, seed: int,
    replications: int, executor: Any, *, passes: int = 8, aim: float = 0.02, verify: int | None = None,
    rounds: int = 8, report: Report | None = None,
) -> Trim:
    """Trim ``plan`` until every interval holds ``target``, then secure it on up to ``verify`` replications
    (default 16 x ``replications``; 0 skips the stage) in at most ``rounds`` rounds (module docstring)."""
    trim = _trim(base, plan, roles, target, policy, seed, replications, executor, passes, aim, report)
    cap = 16 * replications if verify is None else verify
    if cap <= 0:
        return trim
    return _secure(base, trim, roles, target, policy, seed, replications, cap, executor, aim, rounds, report)


def _trim(base: Scenario, plan: Mapping[str, Sequence[int]], roles: Sequence[str], target: float, policy: str,
          seed: int, replications: int, executor: Any, passes: int, aim: float, report: Report | None) -> Trim:
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
        say(f"trim pass {done} ({runs} replications): moved {moved} sixth(s) of an agent; " + "; ".join(
            f"{role} service level {min(e.mean for e in at[role]):.3f}-{max(e.mean for e in at[role]):.3f}" for role in roles))
        if coarse and (moved <= COARSE_SETTLED * sum(len(at[role]) for role in roles) or done >= COARSE_PASSES):
            coarse = False
        elif not coarse and not moved:
            return Trim(steps, at, effect, done, runs)
    at, effect = _levels_and_effect(base, steps, roles, policy, seed, replications, executor,
                                    TRIM_FIRST + (done + 1) * replications)
    return Trim(steps, at, effect, done, replications, converged=False)


def _secure(base: Scenario, trim: Trim, roles: Sequence[str], target: float, policy: str, seed: int, replications: int,
            cap: int, executor: Any, aim: float, rounds: int, report: Report | None) -> Trim:
    """Step 4 of the module docstring: whole-plan simulations until every interval holds with its CI."""
    say = report or (lambda message: None)
    steps = {role: list(counts) for role, counts in trim.steps.items()}
    raised: set[tuple[str, int]] = set()  # intervals this stage added to: never lowered again
    at: dict[str, list[Estimate]] = trim.levels
    used, moved, done = 0, 0, 0
    for done in range(1, rounds + 1):
        at, used = _levels_until_decided(base, steps, roles, target, policy, seed, replications, cap, executor,
                                         SECURE_FIRST)
        moved = 0
        for role in roles:
            for k, (level, lost) in enumerate(zip(at[role], trim.effect[role])):
                step = _secure_move(level, lost, target, aim, (role, k) not in raised)
                if step > 0:
                    raised.add((role, k))
                moved += abs(step)
                _move(steps[role], k, step)
        say(f"secure round {done} ({used} replications): moved {moved} sixth(s) of an agent; " + "; ".join(
            f"{role} service level {min(e.mean for e in at[role]):.3f}-{max(e.mean for e in at[role]):.3f}" for role in roles))
        if not moved:
            break
    if moved:  # the last round moved: simulate what is returned
        at, used = _levels_until_decided(base, steps, roles, target, policy, seed, replications, cap, executor,
                                         SECURE_FIRST)
    return Trim(steps, at, trim.effect, trim.passes, trim.replications, trim.converged, done, used, secured=not moved)


def _levels_until_decided(base: Scenario, steps: Mapping[str, Sequence[int]], roles: Sequence[str], target: float,
                          policy: str, seed: int, replications: int, cap: int, executor: Any,
                          first: int) -> tuple[dict[str, list[Estimate]], int]:
    """Service level per interval at ``steps``; replications double (up to ``cap``) while a CI straddles ``target``."""
    scenario = scenario_with_steps(base, steps)
    runs = run_interval_replications(scenario, policy, seed, min(replications, cap), executor, first=first)
    while True:
        at = _service_levels(runs, roles)
        straddled = any(e.low < target <= e.high for role in roles for e in at[role] if not math.isnan(e.mean))
        if not straddled or len(runs) >= cap:
            return at, len(runs)
        runs += run_interval_replications(scenario, policy, seed, min(len(runs), cap - len(runs)), executor,
                                          first=first + len(runs))


def _secure_move(level: Estimate, effect: float, target: float, aim: float, may_lower: bool) -> int:
    """Steps to add (> 0) to an interval that does not hold ``target`` with its CI, or to remove (-1)
    from one that would still hold it, with ``aim`` of room, a step fewer; at most one agent."""
    if math.isnan(level.mean) or math.isnan(effect):
        return 0
    unit = max(effect, 0.005) / STEPS
    half = max(level.high - level.mean, level.mean - level.low)
    floor = target + aim
    if level.low < target or level.mean < floor:
        return min(STEPS, max(1, math.ceil((max(floor, target + half) - level.mean) / unit)))
    if may_lower and level.mean - unit >= floor and level.low - unit >= target:
        return -1
    return 0


def _service_levels(runs: Sequence[Any], roles: Sequence[str]) -> dict[str, list[Estimate]]:
    tables = [run.intervals for run in runs]
    count = min(len(t) for t in tables)
    names = [f"service_level_{role}" for role in roles]
    rows = [estimates([t[k] for t in tables], names) for k in range(count)]
    return {role: [row[f"service_level_{role}"] for row in rows] for role in roles}


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
    """Steps (sixths of an agent) to add (> 0) or remove (< 0) in one interval, at most ``most``."""
    if math.isnan(level) or math.isnan(effect):
        return 0
    unit = max(effect, 0.005) / STEPS  # service level per step
    excess = level - (target + aim)
    if excess >= 0:
        return -min(most, math.floor(excess / unit))
    return min(most, math.ceil(-excess / unit))


def _move(steps: list[int], k: int, step: int) -> None:
    """Add ``step`` steps to interval ``k`` (remove when negative), evening its steps."""
    cells = range(k * STEPS, (k + 1) * STEPS)
    for _ in range(abs(step)):
        if step > 0:
            i = min(cells, key=lambda c: (steps[c], c))
            steps[i] += 1
        else:
            i = max(cells, key=lambda c: (steps[c], c))
            if steps[i] > 0:
                steps[i] -= 1
