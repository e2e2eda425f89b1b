"""The learning curve: one row per evaluation point, written as CSV and drawn as a PNG.

matplotlib is imported on first use, with the file-only Agg backend.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..whatif.plotting import axis_label

CURVE_COLUMNS = (
    "env_steps", "episodes", "cpu_seconds", "wall_seconds", "train_return", "eval_return",
)
LOSS_COLUMNS = ("loss", "actor_loss", "vf_loss", "entropy")


def curve_columns(kpis: Sequence[str]) -> list[str]:
    return [*CURVE_COLUMNS, *(f"eval_{kpi}" for kpi in kpis), *LOSS_COLUMNS]


def write_curve(rows: Sequence[Mapping[str, Any]], kpis: Sequence[str], path: Path) -> Path:
    columns = curve_columns(kpis)
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    partial.replace(path)
    return path


def read_curve(path: Path) -> list[dict[str, float]]:
    """The rows :func:`write_curve` wrote, every value a float (an empty cell: NaN)."""
    with Path(path).open(newline="") as handle:
        return [{k: float(v) if v != "" else math.nan for k, v in row.items()} for row in csv.DictReader(handle)]


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


STEPS_LABEL = "environment steps (AEC turns)"


def label_panel(ax: Any, metric: str) -> None:
    """Title, both axis labels with units, and a grid for one learning-curve panel."""
    ax.set_title(metric.replace("_", " "))
    ax.set_xlabel(STEPS_LABEL)
    ax.set_ylabel(axis_label(metric))
    ax.grid(alpha=0.3)


def figure_legend(fig: Any, axes: Sequence[Any]) -> None:
    """One legend under the panels with every line drawn in any of them (each label once)."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(len(handles), 4), fontsize=7, frameon=False)


def plot_curve(
    rows: Sequence[Mapping[str, float]],
    kpis: Sequence[str],
    path: Path,
    *,
    references: Mapping[str, Mapping[str, float]] | None = None,
    title: str = "",
) -> Path:
    """Team return (greedy evaluation and training episodes) and the two KPIs against environment steps.

    ``references`` draws each baseline (e.g. ``{"random": {"team_return": ...}, "heuristic": ...}``)
    as a dashed line.
    """
    plt = pyplot()
    steps = [row["env_steps"] for row in rows]
    panels = [("team_return", "eval_return"), *((kpi, f"eval_{kpi}") for kpi in kpis)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), dpi=110)
    for ax, (metric, column) in zip(axes, panels):
        ax.plot(steps, [row[column] for row in rows], marker="o", ms=3, label="trained (greedy)")
        if metric == "team_return":
            ax.plot(steps, [row["train_return"] for row in rows], lw=1, alpha=0.6, label="training episodes")
        for i, (name, values) in enumerate((references or {}).items()):
            value = values.get(metric, math.nan)
            if not math.isnan(value):
                ax.axhline(value, ls="--", lw=1, color=f"C{i + 2}", label=name)
        label_panel(ax, metric)
    figure_legend(fig, axes)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path
