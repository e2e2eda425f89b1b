"""Staffing by interval in seconds: an analytic plan, simulation rounds that correct it, a confirmation on fresh days.

    plan = plan_intervals("examples/sinusoidal_day", 0.5, ["resolver"])
    plan.iterative["resolver"]   # the plan: a whole headcount per interval, every interval meeting the target
    plan.sipp["resolver"]        # textbook SIPP beside it (Erlang per interval, the scenario's handle time)

The path, top to bottom:

1. **Pilot.** A few generously staffed replications measure each role's handle time and services per
   arriving contact. The handle time the formulas use is the scenario's own where it states one (a
   single tool whose mean the pilot confirms within 5%), else the pilot's estimate; the plan says which.
2. **Analytic plan.** The role's offered load is *lagged*: the mean number of contacts an unlimited
   floor would hold, ``m(t)``, the infinite-server load of a day that opens empty
   (``dm/dt = lambda(t) - m(t) / S``). Each interval gets the least headcount whose Erlang service level
   (Erlang A with the scenario's patience, Erlang C without), computed minute by minute at the load
   ``m(t)`` and averaged over the interval's arrivals, meets the target: the modified-offered-load
   method. SIPP sizes the same interval at its own arrival rate as if it lasted for ever.
3. **Simulation rounds.** The plan is simulated on the same days every round (common random numbers:
   replication indices ``0 .. n-1``), in parallel workers. Each interval's service level is estimated
   with its 95% CI, the arrivals in it and in the interval before serving as control variates (their
   expectations are known from the arrival profile, so the day-to-day noise they explain leaves the
   estimate). Replications double, up to ``max_replications``, only while some interval's CI still
   straddles the target (the first round runs ``replications`` alone: the analytic plan's errors
   show on them). Then per interval: a CI wholly below the target, or at the cap a mean less than
   half the CI's half-width above it (about one standard error), adds agents; an interval whose CI
   lies above the target and whose mean would still clear the target plus ``margin`` with an agent
   fewer loses it, unless a round has added to it. How many: the simulation calibrates Erlang's
   formula, each interval's *effective* load being the one at which the formula gives the simulated
   service level, and the formula at that load says what each agent more would give (at most three a
   round); an interval loses one agent a round at most (after a peak the formula understates what one
   agent is worth). Rounds repeat until a round removes nobody, or ``max_rounds``.
4. **Confirmation on fresh days.** The rounds judge every interval on the days they plan on, so of
   sixteen intervals trimmed to the edge one can look a few standard errors better on those days than
   it is. The plan is therefore simulated on days no round saw (from replication
   :data:`CHECK_FIRST`, the same doubling up to ``check_replications``), and every interval whose CI
   on the fresh days reaches under the target gets agents (as many as the calibrated formula says
   it lacks, at least one); the plan is then simulated again on the same fresh days, up to
   :data:`CONFIRM_PASSES` times. The last of these simulations is the plan's check: each interval
   ``meets``, ``below`` or ``undecided``. SIPP's plan is simulated on half ``replications`` of the
   same fresh days, for the comparison.

**Precision** is an option of the same rounds: ``precise=True`` runs them on four times the
replications (:data:`PRECISE`: 240 growing to 400 a round and for the confirmation) with a margin of
0.01 instead of 0.03, so CIs half as wide leave fewer agents added only for the noise, and each
interval ends nearer the target, for four to five times the CPU (about three CPU-minutes on a documented
16-interval day against under one). Explicit ``replications``, ``max_replications`` and ``margin``
override the preset.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..analysis.erlang_a import erlang_a
from ..config.loading import load_scenario
from ..config.scenario import Scenario
from .executors import executor_scope
from .interval_runs import (
    IntervalRun,
    interval_arrival_rates,
    interval_starts,
    mean_service_minutes,
    run_interval_replications,
    scenario_with_plan,
)
from .errors import StudyError
from .interval_staffing import (
    PILOT_REPLICATIONS,
    IntervalPlan,
    PlanCheck,
    Report,
    check_until_decided,
    validate_request,
)
from .staffing import ANALYST_POLICY
from .summary import Estimate

#: The check's replications start here, so the plan is judged on days the rounds never simulated.
CHECK_FIRST = 10_000_000
#: Replications a simulation round starts with (the first round runs these alone), and the most any
#: round or the check runs: under a minute of CPU on a 16-interval day of 1,400 contacts.
REPLICATIONS = 60
MAX_REPLICATIONS = 100
#: Minutes of an interval at which the analytic plan evaluates the formula.
POINTS = 5
#: Most agents one round adds to an interval.
MOST_ADDED = 3
#: Round margin: an interval loses an agent only if its mean would still clear the target by this much.
MARGIN = 0.03
#: Simulations of the plan on fresh days at most (each but the last may add agents).
CONFIRM_PASSES = 3
#: The precise mode: the same rounds on four times the replications, aiming nearer the target.
PRECISE = {"replications": 4 * REPLICATIONS, "max_replications": 4 * MAX_REPLICATIONS, "margin": 0.01}
_MAX_SERVERS = 100_000


def plan_intervals(
    scenario: str | Path | Scenario,
    target_service_level: float,
    roles: Sequence[str] | None = None,
    *,
    policy: str = ANALYST_POLICY,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    replications: int | None = None,
    max_replications: int | None = None,
    max_rounds: int = 3,
    margin: float | None = None,
    check_replications: int | None = None,
    precise: bool = False,
    handle_scale: Sequence[float] = (),
    executor: Any = None,
    workers: int | None = None,
    report: Report | None = None,
) -> IntervalPlan:
    """A headcount per role per interval meeting ``target_service_level`` in every interval (module docstring).

    ``replications``, ``max_replications`` and ``margin`` default to :data:`REPLICATIONS`,
    :data:`MAX_REPLICATIONS` and :data:`MARGIN`, or with ``precise`` to :data:`PRECISE`;
    ``check_replications`` caps the confirmation (default ``max_replications``); ``handle_scale`` gives
    each interval its own handle time, the scenario's x the factor (a forecast's AHT per interval,
    :func:`.interval_runs.scale_handle_times`)."""
    preset = PRECISE if precise else {"replications": REPLICATIONS, "max_replications": MAX_REPLICATIONS,
                                      "margin": MARGIN}
    replications = replications or preset["replications"]
    margin = preset["margin"] if margin is None else margin
    cap = max(replications, max_replications or preset["max_replications"])
    base = load_scenario(scenario, overrides)
    roles = validate_request(base, target_service_level, roles, policy, replications, max_rounds)
    say = report or (lambda message: None)
    starts = interval_starts(base)
    width = base.service_level.interval_minutes
    threshold = base.service_level.threshold_minutes
    patience = base.customers.patience.mean if base.customers.patience is not None else math.inf
    rates = interval_arrival_rates(base)
    notes: list[str] = []
    with executor_scope(executor, workers) as pool:
        # 1. Pilot: handle time and services per arriving contact.
        pilot = run_interval_replications(scenario_with_plan(base, _generous(base, roles)), policy, seed,
                                          PILOT_REPLICATIONS, pool, handle_scale=handle_scale)
        handle: dict[str, float] = {}
        per_contact: dict[str, float] = {}
        arrived = sum(row["offered"] for run in pilot for row in run.intervals)
        for role in roles:
            measured = mean_service_minutes(pilot, role)
            entered = sum(row[f"offered_{role}"] for run in pilot for row in run.intervals)
            if math.isnan(measured) or not entered or not arrived:
                raise StudyError(f"--role {role}: the pilot saw no work for {role}s, nothing to staff")
            handle[role], source = _handle_minutes(base, measured, handle_scale, rates)
            per_contact[role] = entered / arrived
            notes.append(f"{role}: handle time {handle[role]:.3g} min ({source}), "
                         f"{per_contact[role]:.3g} entries into its queue per arriving contact")
        # 2. Analytic plan (modified offered load) and textbook SIPP.
        scale = list(handle_scale) or [1.0] * len(starts)
        minute_rates = _minute_rates(base)
        minute_scale = np.array([scale[min(t // width, len(scale) - 1)] for t in range(len(minute_rates))])
        models = {role: LaggedErlang(minute_rates * per_contact[role], handle[role] * minute_scale, patience,
                                      threshold, width) for role in roles}
        plan = {role: [models[role].least(k, target_service_level) for k in range(len(starts))] for role in roles}
        sipp = {role: _sipp(rates, per_contact[role], [handle[role] * f for f in scale], patience, threshold,
                            target_service_level) for role in roles}
        for role in roles:
            say(f"{role}: analytic plan {plan[role]}; textbook SIPP {sipp[role]}")
        formulas = {role: [_formula(handle[role] * f, patience, threshold) for f in scale] for role in roles}

        def correct(levels: Mapping[str, Sequence[Estimate]], at_cap: bool, confirming: bool) -> tuple[int, int]:
            """Step 3's rule (step 4's with ``confirming``) on every interval: agents added and removed."""
            gained, lost = 0, 0
            for role in roles:
                for k, level in enumerate(levels[role]):
                    step = _move(level, plan[role][k], formulas[role][k], target_service_level, margin,
                                 at_cap=at_cap, may_lower=not confirming and (role, k) not in added,
                                 confirming=confirming)
                    if step > 0:
                        added.add((role, k))
                    plan[role][k] += step
                    gained, lost = gained + max(step, 0), lost + max(-step, 0)
            return gained, lost

        # 3. Simulation rounds on the same days.
        expected = [rate * (min(s + width, base.horizon_minutes) - s) for rate, s in zip(rates, starts)]
        added: set[tuple[str, int]] = set()
        rounds, lowered = 0, 0
        for rounds in range(1, max_rounds + 1):
            most = cap if rounds > 1 else replications  # the analytic plan's errors show on the first batch
            levels, used = _levels_until_decided(base, plan, roles, policy, seed, replications, most, pool,
                                                 target_service_level, expected, handle_scale)
            gained, lowered = correct(levels, used >= most, False)
            say(f"round {rounds} ({used} replications): moved {gained + lowered} agent-interval(s); " + "; ".join(
                f"{role} {plan[role]}" for role in roles))
            if not lowered:  # an agent added only raises service levels: the confirmation checks it
                break
        if lowered:
            notes.append(f"the last of {max_rounds} simulation rounds still removed {lowered} agent-interval(s)")
        # 4. Confirmation on fresh days; its last simulation is the plan's check.
        most = check_replications or cap
        confirmed = 0
        for passes in range(1, CONFIRM_PASSES + 1):
            check = check_plan(base, plan, target_service_level, policy, seed, replications, most, pool,
                               handle_scale)
            if passes == CONFIRM_PASSES:
                break
            gained, _ = correct({role: check.service_level(role) for role in roles}, check.replications >= most,
                                True)
            say(f"confirmation {passes} on fresh days ({check.replications} replications): added {gained} "
                "agent-interval(s)")
            if not gained:
                break
            confirmed += gained
        if confirmed:
            notes.append(f"the fresh days added {confirmed} agent-interval(s) to intervals the planning days flattered")
        sipp_check = check_plan(base, sipp, target_service_level, policy, seed, max(2, replications // 2),
                                max(2, replications // 2), pool, handle_scale)
        say(f"checked both plans on fresh days ({sipp_check.replications} and {check.replications} replications)")
    return IntervalPlan(
        base.name, policy, seed, target_service_level, threshold, width, starts, list(roles), rates, handle,
        sipp, plan, rounds, not lowered, sipp_check, check, notes, base.opens_at,
    )


def check_plan(base: Scenario, plan: Mapping[str, Sequence[int]], target: float, policy: str, seed: int,
               replications: int, cap: int, executor: Any, handle_scale: Sequence[float] = ()) -> PlanCheck:
    """``base`` staffed by ``plan`` (headcount per role per interval) simulated on days no planning
    round saw (from replication ``CHECK_FIRST``), each role's service level per interval with its 95% CI
    (control variates where the arrivals allow); replications double up to ``cap`` while a CI straddles
    ``target``."""
    width = base.service_level.interval_minutes
    expected = [rate * (min(s + width, base.horizon_minutes) - s)
                for rate, s in zip(interval_arrival_rates(base), interval_starts(base))]

    def levels(runs: Sequence[IntervalRun], name: str) -> list[Estimate]:
        return controlled_levels(runs, name, expected if _known_arrivals(base, runs) else None)

    return check_until_decided(scenario_with_plan(base, plan), plan, policy, seed, list(plan), target,
                               replications, cap, executor, first=CHECK_FIRST, levels=levels, handle_scale=handle_scale)


def _generous(base: Scenario, roles: Sequence[str]) -> dict[str, list[int]]:
    """A pilot staffing no queue waits long for: twice the scenario's peak plus five, all day."""
    return {role: [2 * max(base.staffing.peak(role), 1) + 5] * len(interval_starts(base)) for role in roles}


def _handle_minutes(base: Scenario, measured: float, scale: Sequence[float],
                    rates: Sequence[float]) -> tuple[float, str]:
    """The scenario's own handle time where it states one the pilot confirms (scaled per interval, the
    pilot sees the arrival-weighted factor), else the pilot's estimate (divided by that factor)."""
    mix = float(np.dot(scale, rates) / sum(rates)) if scale and sum(rates) else 1.0
    tools = base.handle_times.tools
    if len(tools) == 1:
        stated = getattr(next(iter(tools.values())), "mean_minutes", None)
        if stated and abs(measured - stated * mix) <= 0.05 * stated * mix:
            return float(stated), "the scenario's"
    return measured / mix, "pilot estimate"


def _known_arrivals(base: Scenario, runs: Sequence[IntervalRun]) -> bool:
    """Arrivals from a profile and no returning customers: each interval's offered contacts are Poisson
    with a known mean, so they can serve as control variates."""
    return base.arrivals.trace is None and all(run.record.get("reopened", 0) == 0 for run in runs)


def _minute_rates(base: Scenario) -> np.ndarray:
    """Arrival rate (contacts per minute) in each minute of the day."""
    horizon = int(math.ceil(base.horizon_minutes))
    if base.arrivals.trace is not None:
        rates = interval_arrival_rates(base)
        width = base.service_level.interval_minutes
        return np.array([rates[min(int(t // width), len(rates) - 1)] for t in range(horizon)])
    out = np.zeros(horizon)
    for a, b, rate in base.arrivals.segments(base.horizon_minutes):
        for t in range(int(math.floor(a)), min(int(math.ceil(b)), horizon)):
            out[t] += max(0.0, min(b, t + 1) - max(a, t)) * rate / 60.0
    return out


class LaggedErlang:
    """Erlang service level at the lagged (infinite-server) offered load, minute by minute."""

    def __init__(self, minute_rates: np.ndarray, handle: np.ndarray, patience: float, threshold: float, width: int):
        self.rates, self.handle, self.patience, self.threshold, self.width = minute_rates, handle, patience, threshold, width
        load = np.zeros(len(minute_rates))
        m = 0.0
        for t, (rate, mean) in enumerate(zip(minute_rates, handle)):  # exact for rate and handle constant within the minute
            decay = math.exp(-1.0 / mean)
            m = m * decay + rate * mean * (1.0 - decay)
            load[t] = m
        self.load = load

    def level(self, k: int, servers: int) -> float:
        """Arrival-weighted mean service level over interval ``k`` with ``servers`` staff, the formula
        evaluated at :data:`POINTS` evenly spaced minutes of the interval."""
        first, last = k * self.width, min((k + 1) * self.width, len(self.rates))
        minutes = sorted({min(first + int((j + 0.5) * (last - first) / POINTS), last - 1) for j in range(POINTS)})
        weights = [self.rates[t] for t in minutes]
        if sum(weights) <= 0:
            return 1.0
        levels = [_erlang_level(servers, self.load[t] / self.handle[t], self.handle[t], self.patience, self.threshold)
                  for t in minutes]
        return float(np.dot(weights, levels) / sum(weights))

    def least(self, k: int, target: float) -> int:
        """The least headcount whose :meth:`level` in interval ``k`` meets ``target``."""
        return _least(lambda servers: self.level(k, servers), target)


def _least(level: Callable[[int], float], target: float) -> int:
    """The least ``servers`` with ``level(servers) >= target`` (``level`` grows with ``servers``):
    doubling, then bisection, so a slow formula (Erlang A) is called a dozen times, not once per agent."""
    if level(0) >= target:
        return 0
    low, high = 0, 1  # level(low) < target throughout
    while level(high) < target:
        if high >= _MAX_SERVERS:
            return _MAX_SERVERS
        low, high = high, 2 * high
    return _bisect(level, low, high, target)


def _bisect(level: Callable[[int], float], low: int, high: int, target: float) -> int:
    while high - low > 1:  # level(low) < target <= level(high)
        middle = (low + high) // 2
        if level(middle) >= target:
            high = middle
        else:
            low = middle
    return high


def _formula(handle: float, patience: float, threshold: float) -> Callable[[int, float], float]:
    """Erlang's service level as a function of headcount and offered load (Erlangs) for one interval."""
    return lambda servers, load: _erlang_level(servers, load / handle, handle, patience, threshold)


def _erlang_level(servers: int, rate: float, handle: float, patience: float, threshold: float) -> float:
    if rate <= 0:
        return 1.0
    if servers <= 0 or (not math.isfinite(patience) and servers <= rate * handle):
        return 0.0
    result = erlang_a(servers, rate, handle, patience, threshold)
    return 0.0 if result.service_level is None else float(result.service_level)


def _sipp(rates: Sequence[float], per_contact: float, handles: Sequence[float], patience: float, threshold: float,
          target: float) -> list[int]:
    """Textbook SIPP: each interval's own arrival rate and handle time, as if they lasted for ever."""
    return [_least(lambda servers, rate=rate, handle=handle: _erlang_level(servers, rate * per_contact, handle, patience,
                                                                         threshold), target)
            for rate, handle in zip(rates, handles)]


def _levels_until_decided(base: Scenario, plan: Mapping[str, Sequence[int]], roles: Sequence[str], policy: str,
                          seed: int, replications: int, cap: int, executor: Any, target: float,
                          expected: Sequence[float], handle_scale: Sequence[float]) -> tuple[dict[str, list[Estimate]], int]:
    """Each role's service level per interval at ``plan`` on days ``0 .. n-1``; ``n`` doubles (up to
    ``cap``) while some interval's CI straddles ``target``."""
    scenario = scenario_with_plan(base, plan)
    runs = run_interval_replications(scenario, policy, seed, min(replications, cap), executor, handle_scale=handle_scale)
    while True:
        known = expected if _known_arrivals(base, runs) else None
        levels = {role: controlled_levels(runs, f"service_level_{role}", known) for role in roles}
        straddled = any(e.low < target <= e.high for role in roles for e in levels[role] if not math.isnan(e.mean))
        if not straddled or len(runs) >= cap:
            return levels, len(runs)
        runs += run_interval_replications(scenario, policy, seed, min(len(runs), cap - len(runs)), executor,
                                          first=len(runs), handle_scale=handle_scale)


def controlled_levels(runs: Sequence[IntervalRun], name: str, expected: Sequence[float] | None) -> list[Estimate]:
    """Per interval, the mean of ``name`` over ``runs`` with its 95% CI; with ``expected`` arrivals per
    interval, adjusted by the arrivals in the interval and the one before as control variates."""
    from scipy import stats

    count = min(len(run.intervals) for run in runs)
    values = np.array([[run.intervals[k][name] for k in range(count)] for run in runs], dtype=float)
    offered = np.array([[run.intervals[k]["offered"] for k in range(count)] for run in runs], dtype=float)
    out = []
    for k in range(count):
        y = values[:, k]
        keep = ~np.isnan(y)
        y = y[keep]
        n = len(y)
        if n == 0:
            out.append(Estimate(math.nan, math.nan, math.nan, 0))
            continue
        columns = []
        if expected is not None:
            for j in (k, k - 1):
                if j >= 0:
                    x = offered[keep, j] - expected[j]
                    if np.ptp(x) > 0:
                        columns.append(x)
        q = len(columns)
        if n <= q + 2:
            columns, q = [], 0
        design = np.column_stack([np.ones(n), *columns])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        residual = y - design @ coef
        mean = float(coef[0])
        if n < 2:
            out.append(Estimate(mean, math.nan, math.nan, n))
            continue
        dof = n - q - 1
        spread = float(np.sqrt(residual @ residual / dof))
        if spread == 0.0:
            out.append(Estimate(mean, mean, mean, n) if mean not in (0.0, 1.0) else _at_bound(mean, n))
            continue
        # The controls are centred at their expectations, so the intercept is the controlled mean.
        se = spread * math.sqrt(float(np.linalg.pinv(design.T @ design)[0, 0]))
        half = float(stats.t.ppf(0.975, dof)) * se
        out.append(Estimate(mean, max(mean - half, 0.0), min(mean + half, 1.0), n))
    return out


def _at_bound(value: float, n: int) -> Estimate:
    from .summary import share_at_bound

    low, high = share_at_bound(value, n)
    return Estimate(value, low, high, n)


def _move(level: Estimate, servers: int, erlang: Callable[[int, float], float], target: float, margin: float, *,
          at_cap: bool, may_lower: bool, confirming: bool = False) -> int:
    """Agents to add (> 0) or remove (< 0) in one interval, judged on its simulated ``level``.

    A round adds where the CI lies under ``target``, or at the cap where the mean lies less than half
    the CI's half-width above it; the confirmation (``confirming``) wherever the CI reaches under it.

    The simulation calibrates the formula: the offered load at which ``erlang(servers, load)`` gives
    the simulated service level is the interval's *effective* load, and the formula at that load says
    what each agent more would give (at most :data:`MOST_ADDED`); one agent fewer at most, since after
    a peak the formula understates what an agent is worth."""
    if math.isnan(level.mean):
        return 0
    load = _effective_load(level.mean, servers, erlang)
    floor = target + margin
    if confirming:
        short = level.low < target
    else:
        short = level.high < target or (at_cap and level.mean - level.half_width / 2 < target)
    if short:
        added = 1
        while added < MOST_ADDED and erlang(servers + added, load) < floor:
            added += 1
        return added
    removed = 0
    if may_lower and level.low >= target:
        removed = 1 if servers > 0 and erlang(servers - 1, load) >= floor else 0
    return -removed


def _effective_load(level: float, servers: int, erlang: Callable[[int, float], float]) -> float:
    """The offered load (Erlangs) at which ``erlang(servers, load)`` equals ``level`` (bisection to
    0.01 Erlangs)."""
    low, high = 0.0, 2.0 * servers + 10.0
    while high - low > 0.01:
        middle = (low + high) / 2
        if erlang(servers, middle) >= level:
            low = middle
        else:
            high = middle
    return low
