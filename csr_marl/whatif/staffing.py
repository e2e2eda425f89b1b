"""Staffing search: the least headcount per role that meets every target, confirmed by simulation.

    answer = search_staffing("standard_day", parse_targets(["abandonment_rate<=0.05"]), roles=["resolver"])
    answer.staffing            # {"triage": 2, "resolver": 9, "escalation": 2}

1. A short pilot run measures each searched role's offered load (not the carried load, which the
   pilot's own headcount caps); Erlang A/C turns it into a first headcount (:mod:`.staffing_estimate`).
2. Each candidate headcount is simulated with common random numbers, adding replications in batches
   until every target's confidence interval lies wholly on one side of its bound (or the replication
   cap is reached; then the mean decides and the answer says so).
3. From the estimate the search gallops up or down, then bisects, to the least headcount meeting every
   target (targets are assumed to get easier with more staff). Roles are searched one at a time
   (triage, resolver, escalation), the others held at their latest values, in passes until no answer
   changes. The answer reports the KPIs with their CIs at that headcount and one below.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..config.domain import ROLES
from ..sim.kpis import headline_queue_of
from ..config.loading import ScenarioError, load_scenario
from ..config.scenario import Scenario
from ..policies.base import DEFAULT_POLICY, policy_names
from .errors import StudyError
from .executors import executor_scope
from .records import MORE_STAFF_RAISES, metric_names
from .replications import Replication, run_replications
from .staffing_estimate import ErlangEstimate, estimate_headcount, measured_loads
from .summary import Estimate, estimates
from .targets import Target, Verdict

Report = Callable[[str], None]
PILOT_REPLICATIONS = 3
MAX_PASSES = 3
#: The team a staffing study models: trained staff who know every issue, the library's default team
#: (a study sized with the fair ``heuristic`` would buy headcount for its misreadings).
ANALYST_POLICY = DEFAULT_POLICY
#: Without ``max_headcount`` the search doubles its cap while more staff still helps, up to this.
HARD_CAP = 5_000


@dataclass(frozen=True)
class Evaluation:
    """The simulated KPIs of one staffing (all roles), and each target's verdict."""

    staffing: dict[str, int]
    estimates: dict[str, Estimate]
    verdicts: dict[str, Verdict]
    replications: int
    feasible: bool  # every target met (by the CI, or by the mean where the CI never settled)
    settled: bool  # decided by the CIs: one target clearly missed, or every one clearly met

    def headcount(self, role: str) -> int:
        return self.staffing[role]


@dataclass(frozen=True)
class RoleAnswer:
    role: str
    headcount: int
    erlang: ErlangEstimate
    at: Evaluation
    below: Evaluation | None  # None when the answer is already the least possible headcount
    tried: tuple[int, ...]


@dataclass(frozen=True)
class StaffingAnswer:
    scenario: str
    targets: tuple[Target, ...]
    policy: str
    seed: int
    staffing: dict[str, int]
    roles: list[RoleAnswer]
    evaluations: int
    replications_run: int
    notes: list[str] = field(default_factory=list)


class _Evaluator:
    """Simulates staffings on demand, with CRN seeds, extending replications until the CIs settle."""

    def __init__(
        self, base: Scenario, targets: Sequence[Target], policy: str, seed: int, executor: Any,
        min_replications: int, max_replications: int, report: Report,
    ) -> None:
        self.base, self.targets, self.policy, self.seed = base, tuple(targets), policy, seed
        self.executor = executor
        self.min_replications, self.max_replications = min_replications, max_replications
        self.report = report
        self.records: dict[tuple[tuple[str, int], ...], list[dict[str, float]]] = {}
        self.cache: dict[tuple[tuple[str, int], ...], Evaluation] = {}
        self.replications_run = 0

    def scenario(self, staffing: Mapping[str, int]) -> Scenario | None:
        try:
            return load_scenario(self.base, {f"staffing.{role}": n for role, n in staffing.items()})
        except ScenarioError:
            return None  # e.g. nobody staffed at all: infeasible, nothing to simulate

    def run(self, staffing: Mapping[str, int], replications: int) -> list[dict[str, float]]:
        """At least ``replications`` records for ``staffing`` (replication r always has the same seed)."""
        key = tuple(sorted(staffing.items()))
        records = self.records.setdefault(key, [])
        scenario = self.scenario(staffing)
        if scenario is None:
            return records
        tasks = [Replication(r, scenario, self.policy, self.seed, r) for r in range(len(records), replications)]
        finished = sorted(run_replications(tasks, self.executor), key=lambda pair: pair[0].key)
        records.extend(record for _, record in finished)
        self.replications_run += len(tasks)
        return records

    def evaluate(self, staffing: Mapping[str, int]) -> Evaluation:
        key = tuple(sorted(staffing.items()))
        if key in self.cache:
            return self.cache[key]
        names = metric_names()
        n = self.min_replications
        while True:
            records = self.run(staffing, n)
            stats = estimates(records, names)
            verdicts = {str(t): t.verdict(stats[t.kpi]) if records else "missed" for t in self.targets}
            decided = "missed" in verdicts.values() or "undecided" not in verdicts.values()
            if decided or n >= self.max_replications:
                break
            n = min(n + self.min_replications, self.max_replications)
        if decided:
            feasible = all(v == "met" for v in verdicts.values())
        else:
            feasible = all(t.satisfied(stats[t.kpi].mean) for t in self.targets)
        evaluation = Evaluation(dict(staffing), stats, verdicts, len(records), feasible, decided)
        self.cache[key] = evaluation
        label = ", ".join(f"{r}={c}" for r, c in staffing.items())
        self.report(f"{label}: {'meets' if feasible else 'misses'} the targets ({len(records)} replications{'' if decided else ', CI not settled'})")
        return evaluation


def least_feasible(ok: Callable[[int], bool], start: int, low: int, high: int) -> tuple[int | None, list[int]]:
    """Least ``n`` in ``[low, high]`` with ``ok(n)``, for ``ok`` monotone (False then True).

    Starts at ``start``, gallops (steps 1, 2, 4, ...) up or down until the answer is bracketed, then
    bisects. Returns ``(None, tried)`` when even ``ok(high)`` is False.
    """
    tried: list[int] = []

    def check(n: int) -> bool:
        tried.append(n)
        return ok(n)

    n = min(max(start, low), high)
    if check(n):
        lo, hi, step = low - 1, n, 1
        while hi > low:
            candidate = max(hi - step, low)
            if check(candidate):
                hi, step = candidate, step * 2
            else:
                lo = candidate
                break
    else:
        lo, step = n, 1
        while True:
            if lo >= high:
                return None, tried
            candidate = min(lo + step, high)
            if check(candidate):
                hi = candidate
                break
            lo, step = candidate, step * 2
    # ok(lo) is False (or lo is below the range) and ok(hi) is True: bisect the numbers in between.
    between = range(lo + 1, hi)
    return between.start + bisect.bisect_left(between, True, key=check), tried


def search_staffing(
    scenario: str | Path | Scenario,
    targets: Sequence[Target],
    roles: Sequence[str] | None = None,
    *,
    policy: str = ANALYST_POLICY,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    executor: Any = None,
    workers: int | None = None,
    min_replications: int = 10,
    max_replications: int = 60,
    max_headcount: int | None = None,
    report: Report | None = None,
) -> StaffingAnswer:
    """Least headcount per role meeting every target; see the module docstring.

    ``max_headcount`` caps the search per role. Without it the cap starts at three times the larger of
    the Erlang estimate and the scenario's headcount, plus 10, and doubles while more staff still moves
    the missed targets, so the answer is found from any starting headcount. Raises :class:`StudyError`
    when no headcount up to the cap meets the targets (saying whether headcount or the policy limits
    the KPI), or for bad input.
    """
    base = load_scenario(scenario, overrides)
    roles = _check_inputs(base, targets, roles, policy, min_replications, max_replications)
    say = report or (lambda message: None)
    notes: list[str] = []
    with executor_scope(executor, workers) as pool:
        evaluator = _Evaluator(base, targets, policy, seed, pool, min_replications, max_replications, say)
        staffing = {role: base.staffing.peak(role) for role in ROLES}
        erlang = _erlang_estimates(evaluator, staffing, roles, targets)
        for role in roles:
            say(f"{role}: Erlang estimate {erlang[role]}")
        caps = {role: max_headcount or 3 * max(erlang[role].headcount, staffing[role]) + 10 for role in roles}
        staffing.update({role: erlang[role].headcount for role in roles})
        tried: dict[str, list[int]] = {role: [] for role in roles}
        for _ in range(MAX_PASSES):
            changed = False
            for role in roles:
                answer = _search_role(evaluator, staffing, role, caps[role], tried[role], max_headcount is not None)
                changed |= answer != staffing[role]
                staffing[role] = answer
            if not changed:
                break
        else:
            notes.append(f"roles still interacting after {MAX_PASSES} passes; the answer is the last pass")
        answers = []
        for role in roles:
            at = evaluator.evaluate(staffing)
            below = evaluator.evaluate({**staffing, role: staffing[role] - 1}) if staffing[role] > 0 else None
            answers.append(RoleAnswer(role, staffing[role], erlang[role], at, below, tuple(dict.fromkeys(tried[role]))))
            if staffing[role] < erlang[role].peak_load:
                notes.append(below_load_note(role, staffing[role], erlang[role].peak_load, targets))
            for evaluation in (at, below):
                if evaluation is not None and not evaluation.settled:
                    notes.append(
                        f"{role}={evaluation.staffing[role]}: a target's CI still straddles its bound after "
                        f"{evaluation.replications} replications; the mean decided ({'meets' if evaluation.feasible else 'misses'})"
                    )
    return StaffingAnswer(
        base.name, tuple(targets), policy, seed, dict(staffing), answers, len(evaluator.cache),
        evaluator.replications_run, notes,
    )


def below_load_note(role: str, headcount: int, peak_load: float, targets: Sequence[Target]) -> str:
    """Why an answer below the peak offered load can still meet the targets (one line)."""
    why = "the queue built at the peak carries into quieter minutes or past the end of the day, and callers who hang up need no answer"
    if any(t.kpi == "sla_attainment" for t in targets):
        why += "; sla_attainment counts only contacts whose SLA outcome is known by the end"
    if any(t.kpi.startswith("service_level") for t in targets):
        why += "; service_level counts contacts answered within the threshold, not all answered"
    return f"{role}={headcount} is below the peak offered load ({peak_load:.2f} Erlangs): it meets the targets because {why}"


def _check_inputs(
    base: Scenario, targets: Sequence[Target], roles: Sequence[str] | None, policy: str,
    min_replications: int, max_replications: int,
) -> list[str]:
    if not targets:
        raise StudyError('give at least one --target, e.g. "service_level>=0.8"')
    for target in targets:
        raises = MORE_STAFF_RAISES.get(target.kpi)
        if raises is not None and raises != target.higher_is_better:
            raise StudyError(
                f"--target {target}: more staff makes this harder, so there is no least headcount to find"
            )
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    if min_replications < 2 or max_replications < min_replications:
        raise StudyError(
            f"need 2 <= min replications <= max replications, got {min_replications} and {max_replications}"
        )
    chosen = list(dict.fromkeys(roles)) if roles else [r for r in ROLES if base.staffing.peak(r) > 0]
    for role in chosen:
        if role not in ROLES:
            raise StudyError(f"--role {role!r}: unknown role; roles are {', '.join(ROLES)}")
        if any(getattr(change, role) is not None for change in base.staffing.shifts):
            raise StudyError(
                f"--role {role}: scenario {base.name!r} changes {role} headcount by shift; the search sizes "
                "a flat headcount (remove the shifts with --set staffing.shifts=[])"
            )
    return [role for role in ROLES if role in chosen]


def _erlang_estimates(
    evaluator: _Evaluator, staffing: dict[str, int], roles: Sequence[str], targets: Sequence[Target]
) -> dict[str, ErlangEstimate]:
    generous = {**staffing, **{role: 2 * staffing[role] + 5 for role in roles}}
    records = evaluator.run(generous, PILOT_REPLICATIONS)
    loads = measured_loads(records, list(generous))
    front = headline_queue_of(generous)  # the role whose queue service_level, ASA and P(wait) measure
    return {
        role: estimate_headcount(evaluator.base, role, loads[role], targets, front_role=front) for role in roles
    }


def _search_role(
    evaluator: _Evaluator, staffing: dict[str, int], role: str, cap: int, tried: list[int], capped_by_user: bool
) -> int:
    def ok(count: int) -> bool:
        return evaluator.evaluate({**staffing, role: count}).feasible

    start = staffing[role]
    while True:
        answer, steps = least_feasible(ok, start, 0, cap)
        tried.extend(steps)
        if answer is not None:
            return answer
        helps = _more_staff_helps(evaluator, staffing, role, cap)
        if capped_by_user or not helps or cap >= HARD_CAP:
            break
        evaluator.report(f"{role}: nothing up to {cap} meets the targets and more staff still helps; trying up to {2 * cap}")
        start, cap = cap, min(2 * cap, HARD_CAP)
    best = evaluator.evaluate({**staffing, role: cap})
    missed = [t for t in evaluator.targets if not t.satisfied(best.estimates[t.kpi].mean)] or list(evaluator.targets)
    others = ", ".join(f"{r}={c}" for r, c in staffing.items() if r != role)
    shown = "; ".join(f"{t} (at {cap}: {best.estimates[t.kpi]})" for t in missed)
    if not helps:
        advice = (
            f"more {role}s no longer move it, so headcount is not what limits it: the staff's policy "
            f"({evaluator.policy}) or another role does"
            + ("" if evaluator.policy == ANALYST_POLICY else f" (try --policy {ANALYST_POLICY}, staff who know every issue)")
            + ", or relax the target"
        )
    else:
        advice = "raise --max-headcount or relax the target" if capped_by_user else "relax the target"
    raise StudyError(f"no {role} headcount up to {cap} meets {shown}, with {others}; {advice}")


def _half_width(estimate: Estimate) -> float:
    width = estimate.half_width
    return 0.0 if estimate.n < 2 or math.isnan(width) else width


def _more_staff_helps(evaluator: _Evaluator, staffing: dict[str, int], role: str, cap: int) -> bool:
    """Whether the missed targets' KPIs still improve between half the cap and the cap (beyond noise)."""
    at_cap = evaluator.evaluate({**staffing, role: cap})
    half = evaluator.evaluate({**staffing, role: max(cap // 2, 0)})
    for target in evaluator.targets:
        high, low = at_cap.estimates[target.kpi], half.estimates[target.kpi]
        if target.satisfied(high.mean):
            continue
        gain = (high.mean - low.mean) * (1 if target.higher_is_better else -1)
        noise = max(_half_width(high), _half_width(low), 1e-9)
        if gain > noise:
            return True
    return False
