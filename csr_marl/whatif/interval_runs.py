"""Replications that keep the KPIs per interval, and staffing plans laid out as shift changes.

    plan = {"resolver": [6, 8, 10, ...]}                  # headcount per interval
    scenario = scenario_with_plan(base, plan)               # staffing.shifts at each interval edge
    runs = run_interval_replications(scenario, "expert", seed=0, replications=20, executor=pool)
    table = interval_estimates([run.intervals for run in runs], ["service_level"])   # mean [95% CI]
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..config.domain import ROLES
from ..config.loading import load_scenario, read_trace
from ..config.scenario import Scenario
from ..policies.base import make_policy
from ..sim.center import ContactCenter
from .records import replication_record
from .replications import replication_seed
from .summary import Estimate, estimates

Plan = Mapping[str, Sequence[int]]


def interval_starts(scenario: Scenario) -> list[float]:
    """Start minute of each interval of the day (``service_level.interval_minutes`` wide)."""
    width = scenario.service_level.interval_minutes
    return [k * width for k in range(math.ceil(scenario.horizon_minutes / width - 1e-9))]


def interval_arrival_rates(scenario: Scenario) -> list[float]:
    """Mean arrival rate (contacts per minute) in each interval: the profile's, or the trace's counts."""
    width = scenario.service_level.interval_minutes
    starts = interval_starts(scenario)
    horizon = scenario.horizon_minutes
    if scenario.arrivals.trace is not None:
        counts = [0] * len(starts)
        for minute in read_trace(scenario.arrivals.trace):
            if minute < horizon:
                counts[min(int(minute // width), len(starts) - 1)] += 1
        return [n / (min(s + width, horizon) - s) for n, s in zip(counts, starts)]
    pieces = scenario.arrivals.segments(horizon)
    rates = []
    for start in starts:
        stop = min(start + width, horizon)
        covered = sum(max(0.0, min(b, stop) - max(a, start)) * rate for a, b, rate in pieces)
        rates.append(covered / 60.0 / (stop - start))
    return rates


def scenario_with_plan(base: Scenario, plan: Plan) -> Scenario:
    """``base`` staffed by ``plan`` (headcount per role per interval) as shift changes at interval edges.

    Roles the plan leaves out keep the base scenario's staffing, shift changes included.
    """
    starts = interval_starts(base)
    overrides: dict[str, Any] = {}
    for role, counts in plan.items():
        if len(counts) != len(starts):
            raise ValueError(f"plan for {role}: {len(counts)} intervals given, the day has {len(starts)}")
        overrides[f"staffing.{role}"] = int(counts[0])
    changes: dict[float, dict[str, int]] = {}
    for change in base.staffing.shifts:  # the other roles' own shift changes
        kept = {role: getattr(change, role) for role in ROLES if role not in plan and getattr(change, role) is not None}
        if kept:
            changes.setdefault(float(change.at_minute), {}).update(kept)
    for k in range(1, len(starts)):
        moved = {role: int(counts[k]) for role, counts in plan.items() if counts[k] != counts[k - 1]}
        if moved:
            changes.setdefault(float(starts[k]), {}).update(moved)
    overrides["staffing.shifts"] = [{"at_minute": minute, **changes[minute]} for minute in sorted(changes)]
    return load_scenario(base, overrides)


@dataclass(frozen=True)
class IntervalRun:
    """One replication: its flat record, its interval rows and each role's busy minutes and services."""

    record: dict[str, float]
    intervals: list[dict[str, float]]
    service_minutes: dict[str, tuple[float, int]]  # busy minutes and services per role


@dataclass(frozen=True)
class IntervalTask:
    scenario: Scenario
    policy: str
    base_seed: int
    replication: int
    handle_scale: tuple[float, ...] = ()  # a resolver's handle time x this factor, per interval of the day


def run_interval_replication(task: IntervalTask) -> IntervalRun:
    """Run one replication (in a worker)."""
    center = ContactCenter(task.scenario, replication_seed(task.base_seed, task.replication))
    if task.handle_scale:
        scale_handle_times(center, task.handle_scale, task.scenario.service_level.interval_minutes)
    policy = make_policy(task.policy, task.scenario, center.streams["policy"])
    bind = getattr(policy, "bind", None)
    if bind is not None:  # a policy that reads the running core (e.g. text_classifier_overflow)
        bind(center)
    center.answer_inline(policy)
    decision = center.next_decision()
    while decision is not None:
        center.decide(policy(decision))
        decision = center.next_decision()
    result = center.result()
    kpis = center.kpis
    return IntervalRun(
        replication_record(result), result.intervals,
        {role: (kpis.busy[role], kpis.services[role]) for role in ROLES},
    )


class _ScaledSampler:
    """A handle-time sampler whose draws are scaled by the factor of the interval the clock is in."""

    def __init__(self, inner: Any, clock: Any, scale: Sequence[float], width: float):
        self.inner, self.clock, self.scale, self.width = inner, clock, scale, width
        self.mean = inner.mean

    def __call__(self) -> float:
        k = min(int(self.clock.now // self.width), len(self.scale) - 1)
        return self.inner() * self.scale[k]


def scale_handle_times(center: ContactCenter, scale: Sequence[float], width: float) -> None:
    """Give a resolver's answer (``respond_user``) a mean per interval: the scenario's mean x
    ``scale[k]`` for a service that starts in interval ``k`` (a forecast's own AHT per interval)."""
    key = ("respond_user", False)
    center._tool_samplers[key] = _ScaledSampler(center._tool_samplers[key], center.env, tuple(scale), width)


def run_interval_replications(
    scenario: Scenario, policy: str, seed: int, replications: int, executor: Executor,
    first: int = 0, handle_scale: Sequence[float] = (),
) -> list[IntervalRun]:
    """``replications`` runs of ``scenario`` in replication order from index ``first`` (common random
    numbers by index, so a sequential study extends its runs without repeating any); ``handle_scale``
    see :func:`scale_handle_times`."""
    tasks = [IntervalTask(scenario, policy, seed, r, tuple(handle_scale))
             for r in range(first, first + replications)]
    batches = [tasks[i:i + BATCH] for i in range(0, len(tasks), BATCH)]
    futures = [executor.submit(run_interval_batch, batch) for batch in batches]
    return [run for future in futures for run in future.result()]


#: Replications a worker runs per task: one scenario sent, several days simulated.
BATCH = 8


def run_interval_batch(tasks: Sequence[IntervalTask]) -> list[IntervalRun]:
    """Run several replications in one worker call (the scenario travels once per batch)."""
    return [run_interval_replication(task) for task in tasks]


def interval_estimates(tables: Sequence[Sequence[Mapping[str, float]]], names: Sequence[str]) -> list[dict[str, Estimate]]:
    """Mean and 95% CI across replications of each column in ``names``, interval by interval."""
    if not tables:
        return []
    count = min(len(table) for table in tables)
    return [estimates([table[k] for table in tables], names) for k in range(count)]


def mean_service_minutes(runs: Sequence[IntervalRun], role: str) -> float:
    """Mean busy minutes per service of ``role`` over ``runs`` (NaN when nobody was served)."""
    busy = sum(run.service_minutes[role][0] for run in runs)
    services = sum(run.service_minutes[role][1] for run in runs)
    return busy / services if services else math.nan
