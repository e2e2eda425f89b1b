"""One replication = one flat record: the team return, the manager's score and every headline KPI, always the
same columns."""

from __future__ import annotations

import difflib
import math
from functools import lru_cache

from ..analysis.manager_score import ManagerRates, score_result
from ..config.domain import ROLES
from ..sim.kpis import QUEUES, KpiAccumulator
from ..sim.result import SimulationResult
from .errors import StudyError

#: KPIs that are shares of contacts or time, so a target outside [0, 1] can never be met.
PROPORTIONS: frozenset[str] = frozenset(
    {
        "service_level", "p_wait", "abandonment_rate", "resolution_rate", "first_contact_resolution",
        "escalation_rate", "sla_attainment", "triage_accuracy", "triage_priority_accuracy",
        "triage_routing_accuracy",
        "service_level_first_response", "p_wait_first_response", "upset_rate",
        *(f"occupancy_{role}" for role in ROLES),
        *(f"{what}_{queue}" for queue in QUEUES for what in ("service_level", "p_wait", "abandonment_rate")),
    }
)


#: KPIs that more staff pushes up (True) or down (False); the rest do not move with headcount reliably.
MORE_STAFF_RAISES: dict[str, bool] = {
    "team_return": True, "manager_score": True, "answered": True, "resolved": True, "service_level": True,
    "resolution_rate": True, "sla_attainment": True,
    "abandoned": False, "in_system_at_end": False, "p_wait": False, "asa_minutes": False,
    "abandonment_rate": False, "wait_p50_minutes": False, "wait_p90_minutes": False,
    "wait_p99_minutes": False,
    **{f"occupancy_{role}": False for role in ROLES},
    **{f"service_level_{queue}": True for queue in QUEUES},
    **{f"{what}_{queue}": False for queue in QUEUES for what in ("p_wait", "asa_minutes", "abandonment_rate")},
}


@lru_cache(maxsize=1)
def metric_names() -> tuple[str, ...]:
    """Columns of a replication record: ``team_return``, ``manager_score`` (the day's score in the manager's
    currency, csr_marl.analysis.manager_score), ``manager_net`` (less idle rostered time: for comparing
    staffing plans), then every KPI ``simulate`` reports.

    Per-queue KPIs are listed for every queue, so a record has the same columns whatever queues
    happened to be used (an unused one is NaN).
    """
    empty = KpiAccumulator(1.0, {role: 0.0 for role in ROLES}).summary()
    return ("team_return", "manager_score", "manager_net", *empty)


def natural_range(name: str) -> tuple[float, float]:
    """Where a metric can lie: [0, 1] for shares, [0, inf) for counts and times, anything for returns."""
    if name in PROPORTIONS:
        return 0.0, 1.0
    if name == "sentiment_mean":
        return -1.0, 1.0
    if name == "reply_score_mean":
        return 0.0, 0.5
    if name in ("team_return", "manager_score", "manager_net"):
        return -math.inf, math.inf
    return 0.0, math.inf


def check_metric(name: str, where: str) -> str:
    """``name`` if it is a metric; otherwise a :class:`StudyError` suggesting the closest one."""
    known = metric_names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(known)}"
        raise StudyError(f"{where}: unknown KPI {name!r}{hint}")
    return name


def replication_record(result: SimulationResult, rates: ManagerRates | None = None) -> dict[str, float]:
    """The metrics of one run, in :func:`metric_names` order (NaN where a KPI is undefined; the manager's
    score too without ``rates``, the scenario's ``manager``)."""
    values: dict[str, float] = {"team_return": result.team_return, **result.kpis}
    if rates is not None:
        score = score_result(result, rates)
        values["manager_score"], values["manager_net"] = score.total, score.net
    return {name: float(values.get(name, float("nan"))) for name in metric_names()}
