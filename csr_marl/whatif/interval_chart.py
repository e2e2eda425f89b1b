"""The workforce manager's interval chart: offered contacts against staffed capacity (top), and each
interval's service level with its 95% CI against the target (bottom), for one or more staffing plans.

matplotlib is imported on first use (extra ``csr-marl[plot]``), with the file-only Agg backend.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config.scenario import clock_minutes, clock_time
from .plotting import _pyplot
from .store import atomic_write
from .summary import Estimate


def plot_interval_chart(path: str | Path, *args: Any, **kwargs: Any) -> Path:
    """Draw the chart (:func:`interval_chart_png`'s arguments) and write the PNG atomically to ``path``."""
    return atomic_write(Path(path), interval_chart_png(*args, **kwargs))


def interval_chart_png(
    starts: Sequence[float],
    width: float,
    offered: Sequence[float],
    capacity: Mapping[str, Sequence[float]],
    service_levels: Mapping[str, Sequence[Estimate]],
    target: float | None,
    *,
    title: str = "",
    service_label: str = "service level",
    opens_at: str = "00:00",
) -> bytes:
    """The chart as PNG bytes.

    ``offered`` is contacts per interval (the mean over replications); ``capacity`` per plan is the
    contacts its staff can answer per interval (headcount x interval minutes / minutes per contact);
    ``service_levels`` per plan the interval estimates.
    """
    plt = _pyplot()
    opening = clock_minutes(opens_at)
    hours = [(opening + s) / 60.0 for s in starts]
    bar = width / 60.0
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.5, 6.0), dpi=110, sharex=True)
    top.bar(hours, offered, width=bar * 0.9, align="edge", color="#9bbbd4", label="offered contacts")
    for label, values in capacity.items():
        xs = [h for h in hours for _ in (0, 1)]
        xs = [x + bar * (i % 2) for i, x in enumerate(xs)]
        top.plot(xs, [v for v in values for _ in (0, 1)], linewidth=1.6, label=f"capacity: {label}")
    top.set_ylabel(f"contacts per {width:g} min")
    top.grid(alpha=0.3)
    top.legend(fontsize=8, loc="upper left")
    for i, (label, estimates) in enumerate(service_levels.items()):
        shift = bar * (0.35 + 0.3 * i / max(1, len(service_levels) - 1))
        xs = [h + shift for h in hours]
        means = [e.mean for e in estimates]
        low = [0.0 if math.isnan(e.low) else max(0.0, e.mean - e.low) for e in estimates]
        high = [0.0 if math.isnan(e.high) else max(0.0, e.high - e.mean) for e in estimates]
        bottom.errorbar(xs, means, yerr=[low, high], fmt="o", markersize=4, capsize=2, label=label)
    if target is not None:
        bottom.axhline(target, color="crimson", linestyle="--", linewidth=1.2, label=f"target {target:g}")
    bottom.set_ylim(max(0.0, min([0.5] + [e.low for v in service_levels.values() for e in v if not math.isnan(e.low)]) - 0.05), 1.02)
    bottom.set_ylabel(service_label)
    bottom.set_xlabel("clock time")
    bottom.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: clock_time(x * 60.0)))
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=8, loc="lower left")
    top.set_title(title, fontsize=9)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png")
    plt.close(fig)
    return image.getvalue()
