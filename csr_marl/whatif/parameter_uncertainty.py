"""KPIs of a calibrated scenario with the uncertainty of its fitted parameters.

A scenario calibrated from a log holds point estimates. Simulating it many times gives CIs for the
KPIs *if the estimates were the truth*; with a few days of log the estimates themselves are uncertain,
and those CIs are too narrow (the true day's KPIs fall outside them more often than 5%). Here each
replication first draws its parameters from their fitted distributions, then simulates:

- each interval's arrival rate from its Poisson posterior, Gamma(count + 1/2, 1/days) (Jeffreys prior);
- the handle-time mean from Normal(mean, standard error), its cv kept;
- the exponential patience mean from its log-normal sampling distribution (log-sd 1/sqrt(abandoned)).

Replication ``r`` draws with ``SeedSequence(seed, spawn_key=(r, 1))`` and simulates with the usual
replication seed, so results do not depend on the number of workers.

The ``drawn`` interval is for the KPI the *true* parameters give, not for the mean of the drawn runs:
that mean's CI narrows as replications grow while the parameters stay as uncertain as the log left
them. With ``s_d`` and ``s_f`` the standard deviations of the drawn and the fixed runs, the spread the
parameters add is ``s_p^2 = max(s_d^2 - s_f^2, 0)`` and the interval is
``mean_d +- t * sqrt(s_p^2 + s_d^2 / n)``, clipped to where the KPI can lie.

    rows = kpis_with_parameter_uncertainty(scenario, calibration, replications=40, seed=0)
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..analysis.stats import t_quantile
from ..config.loading import load_scenario
from ..config.scenario import Scenario
from ..policies.base import DEFAULT_POLICY
from .calibrate import Calibration
from .executors import executor_scope
from .records import natural_range
from .replications import Replication, run_replications
from .summary import Estimate, estimates

#: The KPIs ``csr-marl calibrate --check`` compares.
CHECKED = ("service_level", "asa_minutes", "abandonment_rate", "occupancy_resolver")


def parameter_draw(cal: Calibration, queue: str, rng: np.random.Generator) -> dict[str, Any]:
    """Scenario overrides with the arrival profile, handle-time mean and patience drawn (module docstring)."""
    width = cal.interval_minutes
    per_hour = 60.0 / width
    profile = []
    for k, rate in enumerate(cal.arrival_rates):
        count = rate.value / per_hour * cal.days  # contacts in the interval over all days
        profile.append([k * width, round(float(rng.gamma(count + 0.5, 1.0 / cal.days)) * per_hour, 4)])
    overrides: dict[str, Any] = {"arrivals": {"profile": profile}}
    fit = cal.handle.get(queue)
    if fit is not None:
        standard_error = (fit.mean.high - fit.mean.low) / (2 * 1.959963984540054)
        mean = max(float(rng.normal(fit.mean.value, standard_error)), 1e-3 * fit.mean.value)
        overrides["handle_times.tools.respond_user"] = {**fit.scenario_value(), "mean_minutes": round(mean, 4)}
    patience = cal.patience
    if patience.mean_exponential is not None:
        drawn = patience.mean_exponential.value * math.exp(rng.normal(0.0, 1.0 / math.sqrt(patience.abandoned)))
        overrides["customers.patience"] = {"dist": "exponential", "mean_minutes": round(drawn, 4)}
    return overrides


def kpis_with_parameter_uncertainty(
    scenario: Scenario, cal: Calibration, replications: int, seed: int = 0, *, policy: str = DEFAULT_POLICY,
    queue: str = "resolver", names: Sequence[str] = CHECKED, workers: int | None = None, executor: Any = None,
) -> dict[str, dict[str, Estimate]]:
    """``{"fixed": ..., "drawn": ...}``: each KPI's mean and 95% CI over ``replications`` runs with the
    point estimates, and over as many runs each with its own parameter draw (same simulation seeds),
    whose interval carries the parameters' own spread (module docstring)."""
    chosen = queue if queue in cal.handle else next(iter(cal.handle), queue)
    drawn = [
        load_scenario(scenario, parameter_draw(cal, chosen, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 1)))))
        for r in range(replications)
    ]
    tasks = [Replication(("fixed", r), scenario, policy, seed, r) for r in range(replications)]
    tasks += [Replication(("drawn", r), drawn[r], policy, seed, r) for r in range(replications)]
    records: dict[tuple[str, int], Mapping[str, float]] = {}
    with executor_scope(executor, workers) as pool:
        for task, record in run_replications(tasks, pool):
            records[task.key] = record
    fixed = [records[("fixed", r)] for r in range(replications)]
    drawn = [records[("drawn", r)] for r in range(replications)]
    return {"fixed": estimates(fixed, list(names)), "drawn": _with_parameter_spread(fixed, drawn, list(names))}


def _with_parameter_spread(fixed: Sequence[Mapping[str, float]], drawn: Sequence[Mapping[str, float]],
                           names: Sequence[str]) -> dict[str, Estimate]:
    """The drawn runs' means, each with the interval ``mean +- t * sqrt(s_p^2 + s_d^2 / n)`` (module docstring)."""
    plain = estimates(drawn, names)
    out = {}
    for name in names:
        e = plain[name]
        d = np.array([r[name] for r in drawn], dtype=float)
        f = np.array([r[name] for r in fixed], dtype=float)
        d, f = d[~np.isnan(d)], f[~np.isnan(f)]
        if e.n < 2 or f.size < 2 or math.isnan(e.low):
            out[name] = e
            continue
        var_d, var_f = float(d.var(ddof=1)), float(f.var(ddof=1))
        half = t_quantile(0.975, e.n - 1) * math.sqrt(max(var_d - var_f, 0.0) + var_d / e.n)
        lowest, highest = natural_range(name)
        out[name] = Estimate(e.mean, min(max(e.mean - half, lowest), e.low), max(min(e.mean + half, highest), e.high), e.n)
    return out

