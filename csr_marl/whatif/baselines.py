"""Policy baselines: team return and headline KPIs, mean and 95% CI over episodes, per scenario.

Episode ``e`` runs with the same seed under every policy (``SeedSequence(seed, spawn_key=(e,))``), so
two baselines compare policies on the same customers.

``split`` says which tickets each scenario's episodes draw (``tickets.split``, docs/concepts/model.md): ``all`` (the
scenario as written), ``train``, ``test``, or ``both``: two adjacent rows, train then held-out, for each
scenario whose ticket bank holds held-out tickets, one ``all`` row for any other (the validation banks).
Episode ``e`` has the same seed on both sides: the same arrivals, tickets from either side of the bank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..config.loading import load_scenario, load_ticket_bank, scenario_names
from ..config.scenario import Scenario
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
    "team_return", "manager_score", "service_level", "abandonment_rate", "asa_minutes", "resolution_rate",
    "first_contact_resolution", "sla_attainment", "occupancy_resolver", "triage_accuracy",
    "reply_score_mean", "upset_rate",
)


#: What ``split`` may be (module docstring), and how each side is named in a table.
BASELINE_SPLITS: tuple[str, ...] = ("all", "train", "test", "both")
SPLIT_LABELS: dict[str, str] = {"all": "all", "train": "train", "test": "held-out"}


@dataclass(frozen=True)
class BaselineRow:
    scenario: str
    policy: str
    episodes: int
    estimates: dict[str, Estimate]
    split: str = "all"  # the side of the ticket bank the episodes drew from (tickets.split)

    @property
    def label(self) -> str:
        """The scenario, and the side of the split unless it is the whole bank: ``surge (held-out)``."""
        return self.scenario if self.split == "all" else f"{self.scenario} ({SPLIT_LABELS[self.split]})"


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
    split: str = "all",
) -> list[BaselineRow]:
    """Run ``episodes`` episodes of ``policy`` on each scenario: one row per scenario in the given order,
    or per scenario and side of the held-out split (``split``, module docstring)."""
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    if episodes < 1:
        raise StudyError(f"--episodes must be at least 1, got {episodes}")
    if split not in BASELINE_SPLITS:
        raise StudyError(f"--split must be one of {', '.join(BASELINE_SPLITS)}, got {split!r}")
    loaded = {
        (name, side): scenario
        for name in resolve_scenarios(scenarios)
        for side, scenario in _sides(name, overrides, split)
    }
    tasks = [Replication((key, e), scn, policy, seed, e) for key, scn in loaded.items() for e in range(episodes)]
    records: dict[tuple[str, str], dict[int, dict[str, float]]] = {key: {} for key in loaded}
    with executor_scope(executor, workers) as pool:
        for done, (task, record) in enumerate(run_replications(tasks, pool), start=1):
            records[task.key[0]][task.replication] = record
            if progress:
                progress(done, len(tasks))
    metrics = metric_names()
    return [
        BaselineRow(name, policy, episodes, estimates([records[(name, side)][e] for e in range(episodes)], metrics), side)
        for name, side in loaded
    ]


def _sides(name: str, overrides: Mapping[str, Any] | None, split: str) -> list[tuple[str, Scenario]]:
    """The scenario ``name`` once per side of the split a baseline reports (module docstring)."""
    if split == "all":
        return [("all", load_scenario(name, overrides))]
    if split != "both":
        return [(split, load_scenario(name, {**(overrides or {}), "tickets.split": split}))]
    scenario = load_scenario(name, overrides)
    if not load_ticket_bank(scenario.tickets.bank).templates_in("test"):
        return [("all", scenario)]  # nothing held out (a validation bank): the whole bank, one row
    return [(side, load_scenario(name, {**(overrides or {}), "tickets.split": side})) for side in ("train", "test")]


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
        *(["", SPLIT_NOTE] if any(row.split != "all" for row in rows) else []),
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
    """One line per scenario (a ``split`` column when a row drew from one side), ``mean ± half-width``."""
    sides = any(row.split != "all" for row in rows)
    head = "| scenario | split | " if sides else "| scenario | "
    lines = [head + " | ".join(columns) + " |", ("|---|---|" if sides else "|---|") + "---:|" * len(columns)]
    for row in rows:
        lead = f"| {row.scenario} | {SPLIT_LABELS[row.split]} | " if sides else f"| {row.scenario} | "
        lines.append(lead + " | ".join(plus_minus(row.estimates[c]) for c in columns) + " |")
    return "\n".join(lines)


SPLIT_NOTE = (
    "`split`: the side of the ticket bank's held-out split the episodes drew from (`tickets.split`): "
    "`train`, `held-out` (templates and text variants held out of training and of the heuristic's "
    "knowledge base), or `all` where the bank holds nothing out. Both sides of a scenario ran with the "
    "same seeds: the same arrivals, tickets from either side."
)


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
        "scenarios": {row.label: {k: e._asdict() for k, e in row.estimates.items()} for row in rows},
        "splits": {row.label: {"scenario": row.scenario, "split": row.split} for row in rows},
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
        {"scenario": row.scenario, "split": row.split, "policy": row.policy, "episodes": row.episodes,
         **{f"{k}_{part}": getattr(row.estimates[k], part) for k in metrics for part in ("mean", "low", "high")}}
        for row in rows
    ]
    columns = [
        "scenario", "split", "policy", "episodes", *(f"{k}_{part}" for k in metrics for part in ("mean", "low", "high"))
    ]
    return [
        store.atomic_write(folder / f"{stem}.md", baseline_markdown(rows, seed=seed, command=command)),
        store.write_json(folder / f"{stem}.json", baseline_payload(rows, seed=seed, command=command)),
        store.write_csv(folder / f"{stem}.csv", columns, table),
    ]
