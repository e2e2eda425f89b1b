"""Sweeps: every combination of the varied fields, replicated, with confidence intervals, resumable.

    study = sweep_study("standard_day", ["staffing.resolver=6..13"], replications=30)
    outcome = run_sweep(study, "runs/resolvers", plot_kpi="sla_attainment")

The output folder holds ``config.yaml`` (the resolved scenario and the study), ``replications.csv``
(one row per replication, appended as each finishes), ``summary.csv`` (mean and 95% CI of every
metric per grid point), ``manifest.json`` (versions, machine, seeds, config hash, command) and a PNG
plot. Run the same study again into the same folder and it resumes; a different study is refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from .. import __version__
from ..config.domain import ROLES
from ..config.loading import load_scenario
from ..config.scenario import Scenario
from ..policies.base import policy_names
from ..sim.kpis import scenario_headline_queue
from . import store
from .errors import StudyError
from .executors import executor_scope
from .grid import Axis, check_grid_size, format_value, grid_points, parse_vary, point_scenarios
from .plotting import axis_label
from .provenance import file_digest, machine, now, stable_hash, versions
from .records import check_metric, metric_names
from .replications import SEED_SCHEME, Replication, run_replication_with_intervals, run_replications
from .summary import Estimate, estimates
from .targets import Target

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SweepStudy:
    """A validated sweep: a base scenario, the varied axes, replications, policy and base seed."""

    scenario: Scenario
    axes: tuple[Axis, ...]
    replications: int
    policy: str = "heuristic"
    seed: int = 0

    @cached_property
    def points(self) -> list[dict[str, Any]]:
        """The grid: one ``{field: value}`` per point, first axis slowest."""
        return grid_points(self.axes)

    @cached_property
    def scenarios(self) -> list[Scenario]:
        """The scenario of each grid point."""
        return point_scenarios(self.scenario, self.axes)

    @property
    def fields(self) -> list[str]:
        return [axis.field for axis in self.axes]

    @cached_property
    def headline_queue(self) -> str | None:
        """The queue the headline waits measure at every grid point (None if it differs by point)."""
        queues = {scenario_headline_queue(s) for s in self.scenarios}
        return queues.pop() if len(queues) == 1 else None

    @cached_property
    def identity(self) -> dict[str, Any]:
        """What the config hash covers. Not the replication count: more replications extend a study."""
        return {
            "csr_marl": __version__,
            "scenario": scenario_identity(self.scenario),
            "vary": {axis.field: list(axis.values) for axis in self.axes},
            "policy": self.policy,
            "seed": self.seed,
        }

    @property
    def config_hash(self) -> str:
        return stable_hash(self.identity)

    def tasks(self) -> list[Replication]:
        return [
            Replication((point, r), scenario, self.policy, self.seed, r)
            for point, scenario in enumerate(self.scenarios)
            for r in range(self.replications)
        ]


def scenario_identity(scenario: Scenario) -> dict[str, Any]:
    """The scenario as JSON, with referenced files (ticket bank, trace) replaced by content digests."""
    dump = scenario.model_dump(mode="json")
    dump["tickets"]["bank"] = file_digest(scenario.tickets.bank)
    if scenario.arrivals.trace is not None:
        dump["arrivals"]["trace"] = file_digest(scenario.arrivals.trace)
    return dump


def sweep_study(
    scenario: str | Path | Scenario,
    vary: Sequence[str | Axis],
    *,
    replications: int = 30,
    policy: str = "heuristic",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
) -> SweepStudy:
    """Build and validate a sweep; raises :class:`StudyError` (or ``ScenarioError``) with one line."""
    base = load_scenario(scenario, overrides)
    axes = tuple(axis if isinstance(axis, Axis) else parse_vary(axis) for axis in vary)
    if not axes:
        raise StudyError("give at least one --vary FIELD=VALUES, e.g. staffing.resolver=3..10")
    if replications < 1:
        raise StudyError(f"--replications must be at least 1, got {replications}")
    check_grid_size(axes, replications)
    if policy not in policy_names():
        raise StudyError(f"unknown policy {policy!r}; built-in policies: {', '.join(policy_names())}")
    study = SweepStudy(base, axes, replications, policy, seed)
    study.scenarios  # noqa: B018 - validate every grid point now, before anything is written
    return study


@dataclass(frozen=True)
class PointSummary:
    """One grid point: its index, the varied values and the estimate of every metric."""

    index: int
    values: dict[str, Any]
    estimates: dict[str, Estimate]


@dataclass(frozen=True)
class SweepOutcome:
    study: SweepStudy
    folder: Path
    points: list[PointSummary]
    ran: int
    reused: int
    plot: Path | None
    elapsed_seconds: float
    warnings: list[str] = field(default_factory=list)


FILES = {
    "config": "config.yaml",
    "replications": "replications.csv",
    "interval_replications": "interval_replications.csv",
    "summary": "summary.csv",
    "intervals": "intervals.csv",
    "manifest": store.MANIFEST,
}
#: The KPIs per interval a sweep keeps for every replication and summarises with CIs (intervals.csv).
INTERVAL_KPIS: tuple[str, ...] = (
    "offered", "answered_queue", "abandoned", "service_level", "asa_minutes",
    *(f"{what}_{role}" for what in ("headcount", "occupancy") for role in ROLES),
)


def run_sweep(
    study: SweepStudy,
    out: str | Path,
    *,
    executor: Any = None,
    workers: int | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    plot_kpi: str | None = "service_level",
    targets: Sequence[Target] = (),
) -> SweepOutcome:
    """Run (or resume) ``study`` into the folder ``out`` and return the per-point summary.

    ``executor`` is any ``concurrent.futures.Executor`` (the caller shuts it down); by default a
    process pool of ``workers`` processes (one per CPU) is made for the run. ``progress(done, total)``
    is called as replications finish. Raises :class:`StudyError` if ``out`` holds another study.
    """
    started = time.perf_counter()
    if plot_kpi:
        check_metric(plot_kpi, "--kpi")
    folder = Path(out)
    previous = store.claim_folder(folder, "sweep", study.identity, study.config_hash)
    folder.mkdir(parents=True, exist_ok=True)
    fields = study.fields
    columns = ["point", *fields, "replication", *metric_names()]
    log = store.ReplicationLog(
        folder / FILES["replications"], columns,
        key=lambda row: (int(row["point"]), int(row["replication"])),
        expected=lambda key: 0 <= key[0] < len(study.points) and 0 <= key[1] < study.replications,
    )
    rows = log.load()
    interval_log = store.ReplicationLog(
        folder / FILES["interval_replications"], ["point", "replication", "interval", "start_minute", *INTERVAL_KPIS],
        key=lambda row: (int(row["point"]), int(row["replication"]), int(row["interval"])),
        expected=lambda key: 0 <= key[0] < len(study.points) and 0 <= key[1] < study.replications,
    )
    interval_rows = interval_log.load()
    manifest = _manifest(study, previous, command, plot_kpi)
    store.write_json(folder / FILES["manifest"], manifest)
    store.atomic_write(folder / FILES["config"], _config_yaml(study))

    todo = [task for task in study.tasks() if task.key not in rows]
    total = len(study.points) * study.replications
    done = total - len(todo)
    reused = done
    if progress:
        progress(done, total)
    with executor_scope(executor, workers) as pool:
        for task, (record, intervals) in run_replications(todo, pool, worker=run_replication_with_intervals):
            point, replication = task.key
            for k, kpis in enumerate(intervals):  # before the replication's own row: a kill re-runs it
                line = {"point": point, "replication": replication, "interval": k, "start_minute": repr(kpis["start_minute"]),
                        **{name: repr(float(kpis[name])) for name in INTERVAL_KPIS}}
                interval_log.append(line)
                interval_rows[(point, replication, k)] = {key: str(value) for key, value in line.items()}
            labels = {f: format_value(study.points[point][f]) for f in fields}
            row = {"point": point, **labels, "replication": replication, **{k: repr(v) for k, v in record.items()}}
            log.append(row)
            rows[task.key] = {key: str(value) for key, value in row.items()}
            done += 1
            if progress:
                progress(done, total)

    log.rewrite(rows[key] for key in sorted(rows))
    interval_log.rewrite(interval_rows[key] for key in sorted(interval_rows))
    points = summarise_points(study, rows, log.path)
    store.write_csv(folder / FILES["summary"], ["point", *fields, "kpi", "mean", "ci_low", "ci_high", "n"], _summary_rows(points))
    store.write_csv(folder / FILES["intervals"], ["point", *fields, "interval", "start_minute", "kpi", "mean", "ci_low", "ci_high", "n"],
                    interval_summary_rows(study, interval_rows))
    warnings: list[str] = []
    plot = _plot(study, points, folder, plot_kpi, targets, warnings)
    elapsed = time.perf_counter() - started
    manifest["runs"][-1].update(finished_at=now(), ran=len(todo), elapsed_seconds=round(elapsed, 3))
    manifest.update(status="complete", completed_replications=total, files=_files(plot))
    store.write_json(folder / FILES["manifest"], manifest)
    return SweepOutcome(study, folder, points, len(todo), reused, plot, elapsed, warnings)


def summarise_points(
    study: SweepStudy, rows: Mapping[tuple[int, int], Mapping[str, str]], source: Path | str = FILES["replications"]
) -> list[PointSummary]:
    """Estimates per grid point from the recorded rows (every row belongs to the study)."""
    names = metric_names()
    by_point: dict[int, list[dict[str, float]]] = {i: [] for i in range(len(study.points))}
    for (point, replication), row in sorted(rows.items()):
        try:
            values = {name: float(row[name]) for name in names}
        except ValueError:
            bad = next(name for name in names if not _is_number(row[name]))
            raise StudyError(f"{source}: replication {(point, replication)}, column {bad}: {row[bad]!r} is not a number") from None
        by_point[point].append(values)
    return [PointSummary(i, study.points[i], estimates(records, names)) for i, records in by_point.items()]


def interval_summary_rows(study: SweepStudy, rows: Mapping[tuple[int, int, int], Mapping[str, str]]) -> list[dict[str, Any]]:
    """Mean and 95% CI across replications of every interval KPI, per grid point and interval."""
    grouped: dict[tuple[int, int], list[dict[str, float]]] = {}
    starts: dict[tuple[int, int], str] = {}
    for (point, _, interval), row in sorted(rows.items()):
        grouped.setdefault((point, interval), []).append({name: float(row[name]) for name in INTERVAL_KPIS})
        starts[(point, interval)] = row["start_minute"]
    out = []
    for (point, interval), records in grouped.items():
        labels = {f: format_value(study.points[point][f]) for f in study.fields}
        for name, e in estimates(records, INTERVAL_KPIS).items():
            out.append({"point": point, **labels, "interval": interval, "start_minute": starts[(point, interval)],
                        "kpi": name, "mean": repr(e.mean), "ci_low": repr(e.low), "ci_high": repr(e.high), "n": e.n})
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _summary_rows(points: Sequence[PointSummary]) -> list[dict[str, Any]]:
    return [
        {
            "point": p.index,
            **{f: format_value(v) for f, v in p.values.items()},
            "kpi": name,
            "mean": repr(e.mean),
            "ci_low": repr(e.low),
            "ci_high": repr(e.high),
            "n": e.n,
        }
        for p in points
        for name, e in p.estimates.items()
    ]


def _manifest(study: SweepStudy, previous: Mapping[str, Any] | None, command: str | None, plot_kpi: str | None) -> dict[str, Any]:
    history = list(previous.get("runs", [])) if previous else []
    history.append({"started_at": now(), "command": command or "csr_marl.whatif.run_sweep"})
    return {
        "kind": "sweep",
        "config_hash": study.config_hash,
        "command": command or "csr_marl.whatif.run_sweep",
        "scenario": study.scenario.name,
        "policy": study.policy,
        "vary": {axis.field: list(axis.values) for axis in study.axes},
        "grid_points": len(study.points),
        "replications": study.replications,
        "seeds": {"base_seed": study.seed, "scheme": SEED_SCHEME},
        "confidence": 0.95,
        "plot_kpi": plot_kpi,
        "status": "running",
        "completed_replications": None,
        "versions": versions(),
        "machine": machine(),
        "runs": history,
        "files": {},
        "identity": study.identity,
    }


def _files(plot: Path | None) -> dict[str, str]:
    return {**FILES, **({"plot": plot.name} if plot else {})}


def _config_yaml(study: SweepStudy) -> str:
    payload = {
        "study": {
            "kind": "sweep",
            "scenario": study.scenario.name,
            "vary": {axis.field: list(axis.values) for axis in study.axes},
            "replications": study.replications,
            "policy": study.policy,
            "seed": study.seed,
        },
        "scenario": study.scenario.model_dump(mode="json"),
    }
    return yaml.safe_dump(payload, sort_keys=False, allow_unicode=True)


def _plot(
    study: SweepStudy, points: Sequence[PointSummary], folder: Path, kpi: str | None,
    targets: Sequence[Target], warnings: list[str],
) -> Path | None:
    if not kpi:
        return None
    from .plotting import PlotUnavailable, plot_sweep

    target = next((t for t in targets if t.kpi == kpi), None)
    try:
        return plot_sweep(
            points, study.fields, kpi, folder / f"{kpi}.png", target=target, title=_title(study),
            ylabel=_axis_label(kpi, study.headline_queue),
        )
    except PlotUnavailable as exc:
        warnings.append(str(exc))
        return None


def _axis_label(kpi: str, queue: str | None) -> str:
    """The plotted KPI in words with its unit, naming the queue a headline wait measures."""
    if kpi in ("service_level", "p_wait", "asa_minutes") or kpi.startswith("wait_p"):
        return f"{axis_label(kpi)}, {queue or 'headline'} queue"
    return axis_label(kpi)


def _title(study: SweepStudy) -> str:
    return f"{study.scenario.name} · policy={study.policy} · {study.replications} replications · 95% CI"
