"""Calibrate a scenario from a contact log (extra ``csr-marl[analyst]`` for the scipy fits).

    log = read_contact_log("contacts.csv")
    fit = calibrate(log, interval_minutes=30)
    fit.arrival_rates          # contacts per hour per interval, with 95% CIs
    fit.handle["resolver"]     # exponential / lognormal / gamma, chosen by AIC, with a KS line
    fit.patience               # exponential MLE (abandoned / total waiting time) and Kaplan-Meier

The log has one row per contact: ``arrival``, ``answered`` (empty when never answered), ``end``
(closed, or hung up) and ``abandoned`` (1/0, true/false), and optionally ``day``, ``queue``,
``category`` and ``tier``. Times are minutes from the start of the day, or ISO date-times: then the day
is the date, and every day counts from one opening: the stated ``opens_at`` (``HH:MM``), or else the
opening most days share (the start of each day's first arrival's interval, the most common one), so one
early contact cannot move it; a contact before the opening counts in the first interval (a note says how
many). Times with a UTC offset are converted to UTC, and a log mixing times with and without one is
refused. Contacts
of several days are pooled: the arrival profile is the mean count per interval over days. The log's
limits (rows, text, times) are in :mod:`csr_marl.whatif.contact_log`.

Patience is censored: a customer who was answered after waiting ``w`` minutes would have waited at
least ``w``. Abandoned contacts give the patience itself. The exponential MLE of the abandonment rate is
abandoned / total waiting time (of everybody who waited); the Kaplan-Meier estimator needs no family.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..analysis.stats import proportion_ci
from ..config.scenario import clock_time
from .contact_log import MAX_MINUTE, Contact, read_contact_log
from .errors import StudyError

__all__ = ["Calibration", "Contact", "calibrate", "calibration_overrides", "calibration_report", "read_contact_log"]

Z95 = 1.959963984540054
#: The interval widths an arrival profile may have (minutes).
INTERVALS = (15, 30, 60)
#: The most distinct categories (or tiers) a log may name: each is a line of the report.
MAX_LABELS = 200


@dataclass(frozen=True)
class Interval95:
    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.4g} [{self.low:.4g}, {self.high:.4g}]"


@dataclass(frozen=True)
class HandleFit:
    """A queue's handle-time fit: the chosen family, its mean and cv, every family's AIC, a KS line."""

    queue: str
    n: int
    dist: str
    mean: Interval95
    cv: float
    aic: dict[str, float]
    ks_statistic: float
    ks_p_value: float

    def scenario_value(self) -> dict[str, Any]:
        if self.dist in ("exponential", "deterministic"):
            return {"dist": self.dist, "mean_minutes": round(self.mean.value, 4)}
        return {"dist": self.dist, "mean_minutes": round(self.mean.value, 4), "cv": round(self.cv, 4)}

    def goodness_of_fit(self) -> str:
        if self.dist == "deterministic":
            return f"{self.queue}: every one of the {self.n} handle times is {self.mean.value:.4g} min (deterministic; nothing to test)"
        others = ", ".join(f"{name} {aic:.1f}" for name, aic in sorted(self.aic.items(), key=lambda kv: kv[1]))
        verdict = "no evidence against the fit" if self.ks_p_value >= 0.05 else "the fit is rejected at 5%"
        return (f"{self.queue}: {self.dist} (AIC {others}); Kolmogorov-Smirnov D = {self.ks_statistic:.4f}, "
                f"p = {self.ks_p_value:.3f} on {self.n} handle times ({verdict}; p is optimistic with fitted parameters)")


@dataclass(frozen=True)
class PatienceFit:
    abandoned: int
    waited: int
    total_wait_minutes: float
    mean_exponential: Interval95 | None  # None when nobody abandoned
    km_times: list[float]
    km_survival: list[float]
    km_median: float | None

    def survival_at(self, minute: float) -> float:
        """Kaplan-Meier P(patience > minute)."""
        value = 1.0
        for t, s in zip(self.km_times, self.km_survival):
            if t > minute:
                break
            value = s
        return value


@dataclass(frozen=True)
class Calibration:
    days: int
    contacts: int
    interval_minutes: int
    start_minute: float
    horizon_minutes: float
    arrival_rates: list[Interval95]  # contacts per hour, per interval
    handle: dict[str, HandleFit]
    patience: PatienceFit
    tier_mix: dict[str, Interval95]
    category_mix: dict[str, Interval95]
    peak_in_service: int
    notes: list[str] = field(default_factory=list)
    opens_at: str = "00:00"  # clock time of minute 0


def calibrate(contacts: Sequence[Contact], interval_minutes: int = 30, horizon_minutes: float | None = None) -> Calibration:
    """Fit arrivals, handle times, patience and mixes; see the module docstring."""
    if len(contacts) < 20:
        raise StudyError(f"only {len(contacts)} contacts: calibration needs at least 20")
    if interval_minutes not in INTERVALS:
        raise StudyError(f"--interval {interval_minutes}: use {', '.join(map(str, INTERVALS))} minutes")
    if horizon_minutes is not None and not 0 < horizon_minutes <= MAX_MINUTE:
        raise StudyError(f"--horizon {horizon_minutes:g}: give the minutes in a day, more than 0 and at most {MAX_MINUTE:,} (a week)")
    days = sorted({c.day for c in contacts})
    width = float(interval_minutes)
    horizon = horizon_minutes or width * math.ceil(max(c.arrival for c in contacts) / width + 1e-9)
    n = max(1, math.ceil(horizon / width - 1e-9))
    counts = np.zeros(n)
    for c in contacts:
        if c.arrival < horizon:
            counts[min(int(c.arrival // width), n - 1)] += 1
    per_hour = 60.0 / width / len(days)
    rates = [Interval95(k * per_hour, *(end * per_hour for end in poisson_ci(int(k)))) for k in counts]
    by_queue: dict[str, list[float]] = defaultdict(list)
    for c in contacts:
        if c.answered is not None and c.end > c.answered:
            by_queue[c.queue].append(c.end - c.answered)
    handle = {queue: fit_handle_times(queue, np.array(times)) for queue, times in sorted(by_queue.items()) if len(times) >= 10}
    notes = [] if handle else ["fewer than 10 answered contacts per queue: no handle-time fit"]
    opening, note = _opening(contacts)
    notes += [note] if note else []
    return Calibration(
        len(days), len(contacts), interval_minutes, 0.0, horizon, rates, handle, fit_patience(contacts),
        _mix([c.tier for c in contacts]), _mix([c.category for c in contacts]), _peak_in_service(contacts), notes,
        clock_time(opening),
    )


def _opening(contacts: Sequence[Contact]) -> tuple[float, str | None]:
    """The opening every day counts from, and a note when some contacts arrived before it."""
    opening = contacts[0].day_start if contacts else 0.0
    early = [c.early for c in contacts if c.early > 0]
    if not early:
        return opening, None
    days = len({c.day for c in contacts if c.early > 0})
    return opening, (f"{len(early)} contact(s) on {days} day(s) arrived before the {clock_time(opening)} opening "
                     f"(most days' first interval; up to {max(early):.0f} min early): they count in the first interval")


def poisson_ci(count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval for a Poisson mean from one ``count``: chi-square quantiles, [0, ...] at 0."""
    chi2 = _scipy_stats().chi2
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if count == 0 else float(chi2.ppf(tail, 2 * count)) / 2.0
    return low, float(chi2.ppf(1.0 - tail, 2 * count + 2)) / 2.0


def fit_handle_times(queue: str, times: np.ndarray) -> HandleFit:
    """Exponential, lognormal and gamma by maximum likelihood; the least AIC wins."""
    stats = _scipy_stats()
    n = len(times)
    mean = float(times.mean())
    if float(times.max()) - float(times.min()) <= 1e-9 * mean:  # one value: nothing has a spread to fit
        return HandleFit(queue, n, "deterministic", Interval95(mean, mean, mean), 0.0, {}, 0.0, 1.0)
    try:
        return _fit_families(stats, queue, times)
    except (ValueError, RuntimeError, FloatingPointError) as exc:  # e.g. two distinct values, nearly all alike
        raise StudyError(f"queue {queue}: its {n} handle times could not be fitted ({' '.join(str(exc).split())[:200]})") from None


def _fit_families(stats: Any, queue: str, times: np.ndarray) -> HandleFit:
    n = len(times)
    mean = float(times.mean())
    sd = float(times.std(ddof=1))
    candidates: dict[str, tuple[Any, int]] = {}
    candidates["exponential"] = (stats.expon(scale=mean), 1)
    logs = np.log(times)
    mu, sigma = float(logs.mean()), float(logs.std(ddof=0))
    candidates["lognormal"] = (stats.lognorm(s=sigma, scale=math.exp(mu)), 2)
    shape, _, scale = stats.gamma.fit(times, floc=0)
    candidates["gamma"] = (stats.gamma(shape, scale=scale), 2)
    aic = {name: 2 * k - 2 * float(np.sum(dist.logpdf(times))) for name, (dist, k) in candidates.items()}
    best = min(aic, key=aic.__getitem__)
    dist = candidates[best][0]
    ks = stats.kstest(times, dist.cdf)
    cv = float(dist.std() / dist.mean())
    half = Z95 * sd / math.sqrt(n)
    return HandleFit(queue, n, best, Interval95(mean, mean - half, mean + half), cv, aic, float(ks.statistic), float(ks.pvalue))


def fit_patience(contacts: Sequence[Contact]) -> PatienceFit:
    """Exponential MLE (abandoned / total waiting time) with its CI, and the Kaplan-Meier curve."""
    waits, events = [], []
    for c in contacts:
        if c.answered is not None:
            waits.append(c.answered - c.arrival)
            events.append(False)  # censored: patience lasted at least this long
        elif c.abandoned:
            waits.append(c.end - c.arrival)
            events.append(True)
        else:  # still waiting when the log ends
            waits.append(c.end - c.arrival)
            events.append(False)
    total = float(sum(waits))
    abandoned = int(sum(events))
    if abandoned:
        mean = total / abandoned
        # log(mean) is close to normal with standard error 1/sqrt(abandoned) (the censored exponential).
        spread = math.exp(Z95 / math.sqrt(abandoned))
        exponential = Interval95(mean, mean / spread, mean * spread)
    else:
        exponential = None
    times, survival = _kaplan_meier(np.array(waits), np.array(events))
    median = next((t for t, s in zip(times, survival) if s <= 0.5), None)
    return PatienceFit(abandoned, sum(1 for w in waits if w > 0), total, exponential, times, survival, median)


def _kaplan_meier(durations: np.ndarray, observed: np.ndarray) -> tuple[list[float], list[float]]:
    order = np.argsort(durations, kind="stable")
    durations, observed = durations[order], observed[order]
    at_risk = len(durations)
    survival, times, values = 1.0, [], []
    i = 0
    while i < len(durations):
        t = durations[i]
        j = i
        deaths = 0
        while j < len(durations) and durations[j] == t:
            deaths += int(observed[j])
            j += 1
        if deaths:
            survival *= 1.0 - deaths / at_risk
            times.append(float(t))
            values.append(survival)
        at_risk -= j - i
        i = j
    return times, values


def _mix(values: Sequence[str | None]) -> dict[str, Interval95]:
    counts = Counter(v for v in values if v)
    if len(counts) > MAX_LABELS:
        raise StudyError(f"{len(counts):,} distinct values in a tier or category column, more than the {MAX_LABELS} calibrate reports")
    known = sum(counts.values())
    out = {}
    for value in sorted(counts):
        share, low, high = proportion_ci(counts[value], known)
        out[value] = Interval95(share, low, high)
    return out


def _peak_in_service(contacts: Sequence[Contact]) -> int:
    """The most contacts in service at once on any day (a floor for the headcount the log implies)."""
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for c in contacts:
        if c.answered is not None:
            events[c.day] += [(c.end, -1), (c.answered, 1)]
    peak = 0
    for day_events in events.values():
        busy = 0
        for _, step in sorted(day_events):  # ends first at ties
            busy += step
            peak = max(peak, busy)
    return peak


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise StudyError("calibration fits need scipy: pip install 'csr-marl[analyst]'") from None
    return stats


def calibration_overrides(cal: Calibration, queue: str | None = None) -> dict[str, Any]:
    """Scenario overrides from a calibration: the arrival profile per interval, the handle-time fit of
    ``queue`` (default: ``resolver``, or the log's only queue) as the reply's time, patience (exponential
    MLE, or nobody abandons), the tier mix and, as headcount, the most contacts ever in service at once."""
    from ..config.domain import TIERS

    width = cal.interval_minutes
    profile = [[k * width, round(float(rate.value), 4)] for k, rate in enumerate(cal.arrival_rates)]
    if not any(rate for _, rate in profile):
        raise StudyError("no contacts arrive in any interval: nothing to calibrate")
    overrides: dict[str, Any] = {
        "horizon_minutes": cal.horizon_minutes, "warmup_minutes": 0, "opens_at": cal.opens_at,
        "arrivals": {"profile": profile},
        "service_level.interval_minutes": width,
    }
    chosen = queue or ("resolver" if "resolver" in cal.handle else next(iter(cal.handle), None))
    if chosen is not None:
        if chosen not in cal.handle:
            raise StudyError(f"--queue {chosen!r}: the log has no handle times for it (queues: {', '.join(cal.handle)})")
        overrides["handle_times.tools.respond_user"] = cal.handle[chosen].scenario_value()
    mean = cal.patience.mean_exponential
    overrides["customers.patience"] = None if mean is None else {"dist": "exponential", "mean_minutes": round(mean.value, 4)}
    if cal.tier_mix:
        unknown = [t for t in cal.tier_mix if t not in TIERS]
        if unknown:
            raise StudyError(f"tier {unknown[0]!r} in the log: tiers are {', '.join(TIERS)}")
        overrides["customers.tier_mix"] = {t: round(e.value, 6) for t, e in cal.tier_mix.items()}
        total = sum(overrides["customers.tier_mix"].values())
        last = list(overrides["customers.tier_mix"])[-1]
        overrides["customers.tier_mix"][last] = round(overrides["customers.tier_mix"][last] + 1.0 - total, 6)
    if cal.peak_in_service:
        overrides["staffing.resolver"] = cal.peak_in_service
    return overrides


def calibration_payload(cal: Calibration) -> dict[str, Any]:
    """The estimates as strict JSON, each with its 95% CI: per-interval arrival rates (exact Poisson),
    handle-time means, patience and mixes."""
    def ci(e: Interval95 | None) -> dict[str, float] | None:
        return None if e is None else {"value": e.value, "low": e.low, "high": e.high}

    p = cal.patience
    return {
        "days": cal.days, "contacts": cal.contacts, "opens_at": cal.opens_at, "interval_minutes": cal.interval_minutes,
        "horizon_minutes": cal.horizon_minutes,
        "arrival_rates_per_hour": [
            {"start_minute": k * cal.interval_minutes, "start_time": clock_time(k * cal.interval_minutes, cal.opens_at), **ci(r)}
            for k, r in enumerate(cal.arrival_rates)
        ],
        "handle": {q: {"dist": f.dist, "n": f.n, "mean_minutes": ci(f.mean), "cv": f.cv, "aic": f.aic,
                       "ks_statistic": f.ks_statistic, "ks_p_value": f.ks_p_value} for q, f in cal.handle.items()},
        "patience": {"abandoned": p.abandoned, "waited": p.waited, "mean_exponential_minutes": ci(p.mean_exponential),
                     "kaplan_meier_median_minutes": p.km_median},
        "tier_mix": {k: ci(v) for k, v in cal.tier_mix.items()},
        "category_mix": {k: ci(v) for k, v in cal.category_mix.items()},
        "peak_in_service": cal.peak_in_service, "notes": cal.notes,
    }


def calibration_report(cal: Calibration) -> list[str]:
    """What was estimated, one line each, with 95% CIs (printed by the CLI, written beside the scenario)."""
    lines = [f"{cal.contacts} contacts over {cal.days} day(s), {cal.interval_minutes}-minute intervals, "
             f"{cal.horizon_minutes:g} minutes a day"]
    rates = ", ".join(f"{clock_time(k * cal.interval_minutes, cal.opens_at)} {r.value:.1f} [{r.low:.1f}, {r.high:.1f}]"
                      for k, r in enumerate(cal.arrival_rates))
    lines.append(f"day opens at {cal.opens_at}; arrivals per hour by interval, mean [95% CI, exact Poisson]: {rates}")
    for fit in cal.handle.values():
        lines.append(f"handle time {fit.queue}: mean {fit.mean} min, cv {fit.cv:.3f}")
        lines.append("goodness of fit " + fit.goodness_of_fit())
    p = cal.patience
    if p.mean_exponential is None:
        lines.append(f"patience: nobody abandoned ({p.waited} waited, {p.total_wait_minutes:.1f} minutes in all): patience null")
    else:
        median = "not reached" if p.km_median is None else f"{p.km_median:.3g} min"
        lines.append(
            f"patience: exponential MLE mean {p.mean_exponential} min = {p.total_wait_minutes:.1f} waiting minutes / "
            f"{p.abandoned} abandoned; Kaplan-Meier median {median}"
        )
    for name, mix in (("tier", cal.tier_mix), ("category", cal.category_mix)):
        if mix:
            lines.append(f"{name} mix: " + ", ".join(f"{k} {v}" for k, v in mix.items()))
    if cal.category_mix:
        lines.append("the category mix comes from the ticket bank in a scenario; compare it with the bank's")
    lines.append(f"headcount: at most {cal.peak_in_service} contacts were in service at once (staffing.resolver)")
    return lines + cal.notes
