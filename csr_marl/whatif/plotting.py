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
        line = ax.plot(xs, [e.mean for e in est], marker="o", label=label or kpi)[0]
        ax.fill_between(xs, [e.low for e in est], [e.high for e in est], color=line.get_color(), alpha=0.2, linewidth=0)
    if target is not None:
        ax.axhline(target.threshold, color="crimson", linestyle="--", linewidth=1.2, label=f"target {target}")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    elif all(isinstance(x, numbers.Integral) for x in xs_all):
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(x_field)
    ax.set_ylabel(ylabel or kpi)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    return atomic_write(Path(path), image.getvalue())
