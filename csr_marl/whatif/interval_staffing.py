"""An interval plan and its checks: what :func:`.interval_planner.plan_intervals` returns.

    plan = plan_intervals("examples/sinusoidal_day", 0.5, ["resolver"])
    plan.iterative["resolver"]                 # whole headcount per interval
    plan.verdicts(plan.iterative_check)        # per interval: meets, below or undecided
    plan.sipp_misses                           # intervals where textbook SIPP, simulated, misses the target

A check's verdict per interval is sequential: replications double (up to a cap) until every
interval's CI lies on one side of the target; an interval whose CI still straddles it at the cap is
*undecided*, never a miss or a pass. The target is each planned role's own queue service level
(answered within the scenario's threshold), the headline KPI for the resolvers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..config.domain import ROLES
from ..config.scenario import Scenario
from ..policies.base import policy_names
from .errors import StudyError
from .interval_runs import IntervalRun, interval_estimates, run_interval_replications
from .summary import Estimate

Report = Callable[[str], None]
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

    def headcounts(self, role: str) -> list[float]:
        """The plan's headcount per interval (what its check simulated)."""
        return [float(n) for n in self.iterative[role]]

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
        """Whole headcount per role per interval: SIPP's, or the plan's (``iterative``)."""
        return dict(self.sipp if which != "iterative" else self.iterative)


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


def validate_request(base: Scenario, target: float, roles: Sequence[str] | None, policy: str, replications: int,
                     max_rounds: int) -> list[str]:
    """The roles to plan, in domain order; one clear :class:`StudyError` for a request that cannot be planned."""
    if not 0.0 < target < 1.0:
        raise StudyError(f"--target service_level>={target:g}: use a service level between 0 and 1")
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    if replications < 2:
        raise StudyError(f"--replications must be at least 2 for confidence intervals, got {replications}")
    if max_rounds < 1:
        raise StudyError(f"max_rounds must be at least 1, got {max_rounds}")
    if base.max_tickets is not None:
        raise StudyError("a staffing plan covers a day: remove max_tickets from the scenario (--set max_tickets=null)")
    chosen = list(dict.fromkeys(roles)) if roles else [r for r in ROLES if base.staffing.peak(r) > 0]
    for role in chosen:
        if role not in ROLES:
            raise StudyError(f"--role {role!r}: unknown role; roles are {', '.join(ROLES)}")
        if base.staffing.peak(role) == 0:
            raise StudyError(f"--role {role}: scenario {base.name!r} has no {role}s, so no work reaches them")
    return [role for role in ROLES if role in chosen]
