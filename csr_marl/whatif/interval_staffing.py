"""Staffing by interval, precise: the iterative algorithm trimmed in sixths of an interval (``--precise``).

The default planner is :mod:`.interval_planner` (seconds, whole agents); this one holds each interval
within about 0.05 of the target at some 20 times the simulated days. It also holds what both share:
:class:`IntervalPlan`, :class:`PlanCheck` and :func:`check_until_decided`.

    plan = plan_interval_staffing("standard_day", 0.8, roles=["resolver"], replications=20)
    plan.sipp["resolver"]       # Erlang A per interval, each interval on its own
    plan.iterative["resolver"]  # the simulation-based iterative staffing algorithm
    plan.sipp_misses            # intervals where the SIPP staffing, simulated, misses the target

1. A pilot simulation measures each role's mean busy time per service and offered load; SIPP sizes
   every interval from the interval's arrival rate (:func:`csr_marl.analysis.sipp_headcounts`).
2. The iterative staffing algorithm (Feldman, Mandelbaum, Massey & Whitt 2008) starts from a generous
   staffing, simulates the day, samples how many contacts each role has at several minutes of every
   interval, and sets each interval's headcount by :func:`csr_marl.analysis.iterative_headcount`
   (the largest need among the interval's sample minutes); it repeats until the rule moves no
   interval by more than one, or ``max_iterations``. Each step goes half-way to the rule's answer:
   the plain iteration can swing between an understaffed day (inflated counts) and a generous one.
3. The iterative plan is trimmed in steps of a sixth of an interval until every interval holds the
   target, then secured on whole-plan simulations until every interval's CI lies above it
   (:mod:`.interval_trim`): each within about a sixth of an agent's effect above it.
4. Both plans are simulated with the same customers (common random numbers) and each interval's
   service level is reported with its 95% CI against the target. The verdict per interval is
   sequential: replications double (from ``replications`` up to ``max_replications``) until every
   interval's CI lies on one side of the target; an interval whose CI still straddles it at the cap
   is *undecided*, never a miss or a pass.

The target is each planned role's own queue service level (answered within the scenario's threshold),
the headline KPI for the resolvers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..analysis.intervals import iterative_headcount, sipp_headcounts
from ..config.domain import ROLES
from ..config.loading import load_scenario
from ..config.scenario import Scenario
from ..policies.base import policy_names
from .errors import StudyError
from .executors import executor_scope
from .interval_trim import Trim, hold_target, scenario_with_steps
from .interval_runs import (
    IntervalRun,
    interval_arrival_rates,
    interval_estimates,
    interval_starts,
    mean_service_minutes,
    run_interval_replications,
    scenario_with_plan,
)
from .staffing import ANALYST_POLICY
from .summary import Estimate

Report = Callable[[str], None]
SAMPLES_PER_INTERVAL = 6
PILOT_REPLICATIONS = 4


@dataclass(frozen=True)
class PlanCheck:
    """A staffing plan simulated: each interval's estimates (service level per role's queue, offered...)."""

    plan: dict[str, list[int]]
    intervals: list[dict[str, Estimate]]
    replications: int

    def service_level(self, role: str) -> list[Estimate]:
        return [row[f"service_level_{role}"] for row in self.intervals]

    def verdicts(self, target: float, roles: Sequence[str] | None = None) -> list[str]:
        """Per interval: ``below`` when some role's whole service-level CI lies under ``target``,
        ``meets`` when every role's lies at or above it, else ``undecided`` (at ``self.replications``)."""
        out = []
        for k in range(len(self.intervals)):
            levels = [self.service_level(role)[k] for role in (roles or self.plan)]
            levels = [e for e in levels if not math.isnan(e.mean)]
            if any(e.high < target for e in levels):
                out.append("below")
            elif all(e.low >= target for e in levels):
                out.append("meets")
            else:
                out.append("undecided")
        return out


@dataclass(frozen=True)
class IntervalPlan:
    scenario: str
    policy: str
    seed: int
    target: float
    threshold_minutes: float
    interval_minutes: int
    starts: list[float]
    roles: list[str]
    arrival_rates: list[float]  # contacts per minute, per interval
    mean_service: dict[str, float]
    sipp: dict[str, list[int]]
    iterative: dict[str, list[int]]
    iterations: int
    converged: bool
    sipp_check: PlanCheck
    iterative_check: PlanCheck
    notes: list[str] = field(default_factory=list)
    opens_at: str = "00:00"  # the scenario's clock time of minute 0
    stable: Trim | None = None  # the iterative plan trimmed to hold the target (iterative_check simulates it)

    def headcounts(self, role: str) -> list[float]:
        """The plan the iterative check simulated, per interval: the trimmed plan's mean headcount
        (41.5: 41 in three of its steps, 42 in three) when it was trimmed, else the iterative algorithm's."""
        return self.stable.per_interval(role) if self.stable else [float(n) for n in self.iterative[role]]

    def verdicts(self, check: PlanCheck) -> list[str]:
        """Per interval ``meets``, ``below`` or ``undecided`` (see :meth:`PlanCheck.verdicts`)."""
        return check.verdicts(self.target, self.roles)

    def misses(self, check: PlanCheck) -> list[int]:
        """Intervals where a planned role's simulated service level is below the target (its whole CI)."""
        return [k for k, verdict in enumerate(self.verdicts(check)) if verdict == "below"]

    def undecided(self, check: PlanCheck) -> list[int]:
        """Intervals whose CI still straddles the target after ``check.replications`` replications."""
        return [k for k, verdict in enumerate(self.verdicts(check)) if verdict == "undecided"]

    @property
    def sipp_misses(self) -> list[int]:
        return self.misses(self.sipp_check)

    @property
    def iterative_misses(self) -> list[int]:
        return self.misses(self.iterative_check)

    def requirements(self, which: str = "iterative") -> dict[str, list[int]]:
        """Whole headcount per role per interval: SIPP's, or the iterative plan's (trimmed: the largest
        of each interval's steps, what a schedule on the interval grid must cover)."""
        if which != "iterative":
            return dict(self.sipp)
        if self.stable:
            return {role: self.stable.covering(role) for role in self.roles}
        return dict(self.iterative)


def plan_interval_staffing(
    scenario: str | Path | Scenario,
    target_service_level: float,
    roles: Sequence[str] | None = None,
    *,
    policy: str = ANALYST_POLICY,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    replications: int = 20,
    max_replications: int | None = None,
    max_iterations: int = 8,
    hold: bool = True,
    trim_replications: int | None = None,
    executor: Any = None,
    workers: int | None = None,
    report: Report | None = None,
) -> IntervalPlan:
    """Per-interval headcount per role meeting ``target_service_level``; see the module docstring."""
    base = load_scenario(scenario, overrides)
    roles = validate_request(base, target_service_level, roles, policy, replications, max_iterations)
    say = report or (lambda message: None)
    starts = interval_starts(base)
    width = base.service_level.interval_minutes
    threshold = base.service_level.threshold_minutes
    rates = interval_arrival_rates(base)
    mean_rate = sum(rates) / len(rates)
    patience = base.customers.patience
    mean_patience = patience.mean if patience is not None else math.inf
    step = width / SAMPLES_PER_INTERVAL
    sample_minutes = [s + (j + 0.5) * step for s in starts for j in range(SAMPLES_PER_INTERVAL) if s + (j + 0.5) * step < base.horizon_minutes]
    notes: list[str] = []
    with executor_scope(executor, workers) as pool:
        pilot = measure_pilot(base, roles, policy, seed, pool)
        service = {role: pilot[role][0] for role in roles}
        sipp: dict[str, list[int]] = {}
        for role in roles:
            load = pilot[role][1]
            if math.isnan(service[role]) or math.isnan(load) or load <= 0:
                raise StudyError(f"--role {role}: the pilot saw no work for {role}s, nothing to staff")
            per_contact = load / mean_rate / service[role]  # the role's services per arriving contact
            role_rates = [rate * per_contact for rate in rates]
            sipp[role] = sipp_headcounts(role_rates, service[role], threshold, target_service_level, mean_patience)
            say(f"{role}: {service[role]:.2f} min per service, offered load {load:.2f} Erlangs; SIPP {sipp[role]}")
        current = {role: [max(2 * n, n + 2) for n in counts] for role, counts in sipp.items()}
        converged, iterations, history = False, 0, []
        for iterations in range(1, max_iterations + 1):
            runs = run_interval_replications(scenario_with_plan(base, current), policy, seed, replications, pool, sample_minutes)
            rule = {role: _iterate(runs, role, mean_service_minutes(runs, role) or service[role], threshold,
                                   target_service_level, len(starts), max(current[role]) * 2 + 10)
                    for role in roles}
            moved = max(abs(a - b) for role in roles for a, b in zip(rule[role], current[role]))
            say(f"iteration {iterations}: largest change {moved}; " + "; ".join(f"{r} {rule[r]}" for r in roles))
            if moved <= 1:
                current, converged = rule, True
                break
            history.append((moved, rule))
            if len(history) >= 3 and history[-1][0] >= history[-2][0] >= history[-3][0]:
                # No longer settling: the rule swings by simulation noise. Take the rounded-up mean of
                # its last two answers (more replications narrow the swing).
                last, before = history[-1][1], history[-2][1]
                current = {role: [math.ceil((a + b) / 2) for a, b in zip(last[role], before[role])] for role in roles}
                notes.append(f"the iterative algorithm swung by up to {moved} per interval between iterations "
                             "(simulation noise); the plan is the rounded-up mean of its last two answers")
                break
            current = {role: [_halfway(old, new) for old, new in zip(current[role], rule[role])] for role in roles}
        else:
            notes.append(f"the iterative algorithm still moved after {max_iterations} iterations; the plan is its last")
        stable = None
        if hold:
            stable = hold_target(base, current, roles, target_service_level, policy, seed,
                                 trim_replications or 10 * replications, pool, report=say)
            if not stable.secured:
                notes.append(f"the trimmed plan still moved a step after {stable.rounds} whole-plan rounds (simulation "
                             "noise near the target); more --trim-replications settle it")
        cap = max(replications, max_replications or replications)
        final = scenario_with_steps(base, stable.steps) if stable else scenario_with_plan(base, current)
        checks = [check_until_decided(staffed, plan, policy, seed, roles, target_service_level, replications, cap, pool)
                  for staffed, plan in ((scenario_with_plan(base, sipp), sipp), (final, current))]
        say(f"simulated both plans with the same customers ({checks[0].replications} and "
            f"{checks[1].replications} replications)")
    return IntervalPlan(
        base.name, policy, seed, target_service_level, threshold, width, starts, list(roles), rates, service,
        sipp, current, iterations, converged, checks[0], checks[1], notes, base.opens_at, stable,
    )


def measure_pilot(base: Scenario, roles: Sequence[str], policy: str, seed: int, executor: Any,
                  replications: int = PILOT_REPLICATIONS) -> dict[str, tuple[float, float]]:
    """Each role's mean handle time (minutes) and offered load (Erlangs) from a generously staffed pilot.

    Handle time is busy minutes per *completed* service: a service cut off by the end of the day adds
    its minutes but no completion (see :meth:`csr_marl.sim.kpis.KpiAccumulator.unfinished_span`), so
    the estimate carries no end-of-day censoring bias.
    """
    starts = interval_starts(base)
    plan = {role: [2 * max(base.staffing.peak(role), 1) + 5] * len(starts) for role in roles}
    runs = run_interval_replications(scenario_with_plan(base, plan), policy, seed, replications, executor)
    return {
        role: (mean_service_minutes(runs, role), float(np.nanmean([run.record[f"offered_load_{role}"] for run in runs])))
        for role in roles
    }


def check_until_decided(scenario: Scenario, plan: Mapping[str, Sequence[int]], policy: str, seed: int,
                        roles: Sequence[str], target: float, replications: int, cap: int, executor: Any,
                        first: int = 0, levels: Callable[[Sequence[IntervalRun], str], list[Estimate]] | None = None,
                        handle_scale: Sequence[float] = ()) -> PlanCheck:
    """Simulate ``scenario`` (staffed by ``plan``) from replication ``first``, doubling the replications
    (up to ``cap``) while some interval's service-level CI for a role in ``roles`` straddles ``target``.
    ``levels`` (runs, column) replaces the plain mean and CI of each role's service level; ``handle_scale``
    see :func:`.interval_runs.scale_handle_times`."""
    runs = run_interval_replications(scenario, policy, seed, replications, executor, first=first,
                                     handle_scale=handle_scale)
    while True:
        check = _check_plan({r: list(c) for r, c in plan.items()}, runs)
        if levels is not None:
            for role in roles:
                name = f"service_level_{role}"
                for row, estimate in zip(check.intervals, levels(runs, name)):
                    row[name] = estimate
        straddled = any(e.low < target <= e.high for role in roles for e in check.service_level(role))
        if not straddled or len(runs) >= cap:
            return check
        runs += run_interval_replications(scenario, policy, seed, min(len(runs), cap - len(runs)), executor,
                                          first=first + len(runs), handle_scale=handle_scale)


def _check_plan(plan: Mapping[str, list[int]], runs: Sequence[IntervalRun]) -> PlanCheck:
    names = list(runs[0].intervals[0]) if runs and runs[0].intervals else []
    return PlanCheck(dict(plan), interval_estimates([run.intervals for run in runs], names), len(runs))


def _halfway(old: int, new: int) -> int:
    """Move half-way to the rule's answer (at least one step): an understaffed day inflates the counts
    and a generous one deflates them, so the plain iteration can swing between the two; the half-way
    step keeps its fixed points and settles on them."""
    if abs(new - old) <= 1:
        return new
    return old + (new - old) // 2 if new > old else old - (old - new) // 2


def _iterate(runs: Sequence[IntervalRun], role: str, mean_service: float, threshold: float, target: float,
             n_intervals: int, limit: int) -> list[int]:
    samples = np.array([run.present[role] for run in runs])  # replications x sample minutes
    per_interval = samples.shape[1] // n_intervals if n_intervals else 0
    rate = 1.0 / mean_service
    needs = []
    for k in range(n_intervals):
        columns = samples[:, k * per_interval:(k + 1) * per_interval] if per_interval else samples[:, :0]
        needs.append(max(
            (iterative_headcount(columns[:, j], rate, threshold, target, limit) for j in range(columns.shape[1])),
            default=0,
        ))
    return needs


def validate_request(base: Scenario, target: float, roles: Sequence[str] | None, policy: str, replications: int,
           max_iterations: int) -> list[str]:
    if not 0.0 < target < 1.0:
        raise StudyError(f"--target service_level>={target:g}: use a service level between 0 and 1")
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    if replications < 2:
        raise StudyError(f"--replications must be at least 2 for confidence intervals, got {replications}")
    if max_iterations < 1:
        raise StudyError(f"--max-iterations must be at least 1, got {max_iterations}")
    if base.max_tickets is not None:
        raise StudyError("a staffing plan covers a day: remove max_tickets from the scenario (--set max_tickets=null)")
    chosen = list(dict.fromkeys(roles)) if roles else [r for r in ROLES if base.staffing.peak(r) > 0]
    for role in chosen:
        if role not in ROLES:
            raise StudyError(f"--role {role!r}: unknown role; roles are {', '.join(ROLES)}")
        if base.staffing.peak(role) == 0:
            raise StudyError(f"--role {role}: scenario {base.name!r} has no {role}s, so no work reaches them")
    return [role for role in ROLES if role in chosen]
