"""Policy baselines: team return and headline KPIs, mean and 95% CI over episodes, per scenario.

Episode ``e`` runs with the same seed under every policy (``SeedSequence(seed, spawn_key=(e,))``), so
two baselines compare policies on the same customers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..config.loading import load_scenario, scenario_names
from ..policies.base import policy_names
from ..sim.kpis import kpi_definitions
from . import store
from .errors import StudyError
from .executors import executor_scope
from .provenance import machine, now, versions
from .records import metric_names
from .replications import SEED_SCHEME, Replication, run_replications
from .summary import Estimate, estimates

HEADLINE: tuple[str, ...] = (
    "team_return", "service_level", "abandonment_rate", "asa_minutes", "resolution_rate",
    "first_contact_resolution", "sla_attainment", "occupancy_resolver", "triage_accuracy",
    "reply_score_mean", "upset_rate",
)


@dataclass(frozen=True)
class BaselineRow:
    scenario: str
    policy: str
    episodes: int
    estimates: dict[str, Estimate]


def resolve_scenarios(spec: str | Sequence[str]) -> list[str]:
    """``"all"`` (every shipped scenario, whatever is in ``scenarios/`` now), a comma list, or a list."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [name.strip() for name in names if name.strip()]
    if names == ["all"]:
        return scenario_names()
    if not names:
        raise StudyError("--scenario: give a scenario name, a comma list, or all")
    for name in names:
        load_scenario(name)  # unknown names fail here, listing the known ones
    return names


def run_baselines(
    scenarios: str | Sequence[str],
    policy: str = "random",
    *,
    episodes: int = 20,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    executor: Any = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[BaselineRow]:
    """Run ``episodes`` episodes of ``policy`` on each scenario; one row per scenario, in the given order."""
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    if episodes < 1:
        raise StudyError(f"--episodes must be at least 1, got {episodes}")
    names = resolve_scenarios(scenarios)
    loaded = {name: load_scenario(name, overrides) for name in names}
    tasks = [Replication((name, e), loaded[name], policy, seed, e) for name in names for e in range(episodes)]
    records: dict[str, dict[int, dict[str, float]]] = {name: {} for name in names}
    with executor_scope(executor, workers) as pool:
        for done, (task, record) in enumerate(run_replications(tasks, pool), start=1):
            records[task.key[0]][task.replication] = record
            if progress:
                progress(done, len(tasks))
    metrics = metric_names()
    return [
        BaselineRow(name, policy, episodes, estimates([records[name][e] for e in range(episodes)], metrics))
        for name in names
    ]


def baseline_markdown(rows: Sequence[BaselineRow], *, seed: int, command: str, columns: Sequence[str] = HEADLINE) -> str:
    """A Markdown report: what ran, where, and a table of mean ± 95% CI half-width per scenario."""
    policy = rows[0].policy if rows else "?"
    episodes = rows[0].episodes if rows else 0
    info = machine()
    lines = [
        f"# `{policy}` policy baseline",
        "",
        f"{episodes} episodes per scenario, mean ± half-width of the 95% confidence interval (Student t). "
        f"Episode e runs with numpy `SeedSequence(entropy={seed}, spawn_key=(e,))`, the same customers "
        "under every policy.",
        "",
        f"- generated: {now()} by `{command}`",
        f"- machine: {info['platform']}, {info['cpu_count']} CPUs",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        "",
        markdown_table(rows, columns),
        "",
        "What the columns measure:",
        "",
        *(f"- `{name}`: {definition}" for name, definition in kpi_definitions().items() if name in columns),
        "",
    ]
    return "\n".join(lines)


def markdown_table(rows: Sequence[BaselineRow], columns: Sequence[str] = HEADLINE) -> str:
    """One line per scenario, ``mean ± half-width`` per column."""
    lines = ["| scenario | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for row in rows:
        lines.append(f"| {row.scenario} | " + " | ".join(plus_minus(row.estimates[c]) for c in columns) + " |")
    return "\n".join(lines)


def plus_minus(estimate: Estimate) -> str:
    """``mean ± half-width`` (just the mean from one value, a dash from none)."""
    if estimate.n == 0:
        return "–"
    if estimate.n == 1:
        return f"{estimate.mean:.3f}"
    return f"{estimate.mean:.3f} ± {estimate.half_width:.3f}"


def baseline_payload(rows: Sequence[BaselineRow], *, seed: int, command: str) -> dict[str, Any]:
    """The same results as JSON-ready data, with every metric's mean, CI and n."""
    return {
        "policy": rows[0].policy if rows else None,
        "episodes": rows[0].episodes if rows else 0,
        "seed": seed,
        "seed_scheme": SEED_SCHEME,
        "confidence": 0.95,
        "generated_at": now(),
        "command": command,
        "machine": machine(),
        "versions": versions(),
        "scenarios": {row.scenario: {k: e._asdict() for k, e in row.estimates.items()} for row in rows},
    }


def write_baseline_report(
    rows: Sequence[BaselineRow], out_dir: str | Path, *, seed: int, command: str
) -> list[Path]:
    """Write ``<policy>_baseline.md``, ``.json`` and ``.csv`` into ``out_dir`` (each atomically)."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{rows[0].policy}_baseline" if rows else "baseline"
    metrics = metric_names()
    table = [
        {"scenario": row.scenario, "policy": row.policy, "episodes": row.episodes,
         **{f"{k}_{part}": getattr(row.estimates[k], part) for k in metrics for part in ("mean", "low", "high")}}
        for row in rows
    ]
    columns = ["scenario", "policy", "episodes", *(f"{k}_{part}" for k in metrics for part in ("mean", "low", "high"))]
    return [
        store.atomic_write(folder / f"{stem}.md", baseline_markdown(rows, seed=seed, command=command)),
        store.write_json(folder / f"{stem}.json", baseline_payload(rows, seed=seed, command=command)),
        store.write_csv(folder / f"{stem}.csv", columns, table),
    ]
