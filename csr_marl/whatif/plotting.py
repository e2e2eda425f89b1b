"""The sweep plot: a KPI against the first varied field, with its confidence band and the target line.

matplotlib is imported on first use (extra ``csr-marl[plot]``) with the file-only Agg backend.
"""

from __future__ import annotations

import io
import numbers
from pathlib import Path
from typing import Any, Sequence

from .grid import format_value
from .store import atomic_write
from .targets import Target


SHARES = (
    "service_level", "p_wait", "abandonment_rate", "resolution_rate", "first_contact_resolution",
    "escalation_rate", "sla_attainment", "occupancy", "triage_accuracy", "triage_priority_accuracy",
    "triage_routing_accuracy", "upset_rate",
)
NAMED = {
    "team_return": "team return (reward per episode)",
    "asa_minutes": "ASA: mean wait of answered contacts (minutes)",
    "arrivals.rate_per_hour": "arrival rate (contacts per hour)",
    "reply_score_mean": "mean reply grade (0 to 0.5)",
    "sentiment_mean": "mean customer sentiment (-1 to 1)",
    "service_level.threshold_minutes": "service-level threshold (minutes)",
}


def axis_label(name: str) -> str:
    """A KPI or scenario field in words, with its unit: ``staffing.resolver`` -> ``resolver staff (headcount)``."""
    if name in NAMED:
        return NAMED[name]
    if name.startswith("staffing.") and name.count(".") == 1:
        return f"{name.split('.')[1]} staff (headcount)"
    if name.startswith("handle_times.") and name.endswith(".mean_minutes"):
        return f"{name.split('.')[-2]} mean handle time (minutes)"
    words = name.split(".")[-1].replace("_", " ").replace("sla ", "SLA ")
    context = " ".join(part.replace("_", " ") for part in name.split(".")[:-1])
    if name.endswith("_minutes"):
        return f"{context} {words.removesuffix(' minutes')} (minutes)".strip()
    if name.endswith("_per_hour"):
        return f"{context} {words.removesuffix(' per hour')} (per hour)".strip()
    if name.startswith(SHARES):
        return f"{words} (share, 0 to 1)"
    return f"{context} {words}".strip()


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("no plot written: it needs matplotlib, pip install 'csr-marl[plot]'") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_sweep(
    points: Sequence[Any],
    fields: Sequence[str],
    kpi: str,
    path: str | Path,
    *,
    target: Target | None = None,
    title: str = "",
    ylabel: str | None = None,
) -> Path:
    """Draw ``kpi`` (mean and CI band) against ``fields[0]``, one line per combination of the others.

    ``points`` are :class:`~csr_marl.whatif.sweep.PointSummary`-like objects (``values``,
    ``estimates``). The PNG is written atomically to ``path``.
    """
    plt = _pyplot()
    x_field, series_fields = fields[0], list(fields[1:])
    xs_all = [p.values[x_field] for p in points]
    numeric = all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in xs_all)
    categories = list(dict.fromkeys(format_value(x) for x in xs_all))
    series: dict[str, list[Any]] = {}
    for point in points:
        label = ", ".join(f"{f}={format_value(point.values[f])}" for f in series_fields)
        series.setdefault(label, []).append(point)

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    for label, members in series.items():
        members = sorted(members, key=lambda p: p.values[x_field] if numeric else categories.index(format_value(p.values[x_field])))
        xs = [p.values[x_field] if numeric else categories.index(format_value(p.values[x_field])) for p in members]
        est = [p.estimates[kpi] for p in members]
        line = ax.plot(xs, [e.mean for e in est], marker="o", label=f"mean, {label}" if label else "mean over replications")[0]
        ax.fill_between(xs, [e.low for e in est], [e.high for e in est], color=line.get_color(), alpha=0.2, linewidth=0,
                        label=f"95% CI, {label}" if label else "95% confidence interval")
    if target is not None:
        ax.axhline(target.threshold, color="crimson", linestyle="--", linewidth=1.2, label=f"target {target}")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    elif all(isinstance(x, numbers.Integral) for x in xs_all):
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(axis_label(x_field))
    ax.set_ylabel(ylabel or axis_label(kpi))
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    return atomic_write(Path(path), image.getvalue())
