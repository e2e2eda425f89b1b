"""The learning curve: one row per evaluation point, written as CSV and drawn as a PNG.

matplotlib is imported on first use, with the file-only Agg backend.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

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


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


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
        ax.set_title(metric)
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
