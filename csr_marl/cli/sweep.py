"""``csr-marl sweep``: a staffing what-if grid with replications, CIs, a plot; resumable.

Also the option declarations and helpers the other what-if commands share (executor options, the
command line recorded in manifests).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..sim.kpis import kpi_definitions
from ..whatif import (
    PointSummary,
    StudyError,
    SweepDefinition,
    SweepStudy,
    Target,
    load_sweep_definition,
    parse_targets,
    parse_vary,
    run_sweep,
    sweep_study,
)
from ..whatif.executors import executor_scope
from ..whatif.staffing import ANALYST_POLICY
from ..whatif.grid import format_value
from .common import check_output_folder, console, escape, friendly_errors, parse_sets, print_definitions, print_json, progress_bar, queue_label, warn, with_overrides

WORKERS = typer.Option(None, "--workers", "-w", min=1, help="Parallel workers (default: one per CPU).")
BACKEND = typer.Option("process", "--backend", help="process (local pool) or ray (pip install 'csr-marl\\[ray]').")
RAY_ADDRESS = typer.Option(None, "--ray-address", help="Ray cluster to join, e.g. auto or ray://host:10001 (default: start a local one).")
SETS = typer.Option(None, "--set", help="Override KEY=VALUE on the base scenario (dotted path, YAML value); repeatable.")
SEED = typer.Option(None, "--seed", "-s", help="Base seed; replication r uses SeedSequence(seed, spawn_key=(r,)). \\[default: 0]")
TARGETS = typer.Option(None, "--target", "-t", help='KPI bound such as "service_level>=0.8"; repeatable.')


def check_backend(backend: str) -> str:
    if backend not in ("process", "ray"):
        raise StudyError(f"--backend {backend!r}: use process or ray")
    return backend


def invocation(ctx: typer.Context) -> str:
    """The command line as the parsed parameters say it (recorded in manifests and reports)."""
    parts = ctx.command_path.split()
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if value is None or value == () or value == [] or value is False:
            continue
        if param.param_type_name == "argument":
            parts.append(str(value))
            continue
        flag = max(param.opts, key=len)
        if value is True:
            parts.append(flag)
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            parts += [flag, str(item)]
    return shlex.join(parts)


@friendly_errors
def sweep_command(
    ctx: typer.Context,
    scenario: Optional[str] = typer.Argument(None, help="Scenario name or YAML path (or give --config)."),
    vary: Optional[list[str]] = typer.Option(None, "--vary", "-v", help="FIELD=VALUES: 3..10, 0.5..2:0.5 or 100,150; repeatable (grid of every combination)."),
    replications: Optional[int] = typer.Option(None, "--replications", "-r", help="Replications per grid point. \\[default: 30]"),
    policy: Optional[str] = typer.Option(None, "--policy", "-p", help="Built-in policy (expert: staff who know every issue; heuristic: the fair RL baseline). \\[default: expert]"),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (created; rerun the same command to resume)."),
    kpi: Optional[str] = typer.Option(None, "--kpi", help="KPI to plot and show. \\[default: service_level]"),
    targets: Optional[list[str]] = TARGETS,
    sets: Optional[list[str]] = SETS,
    seed: Optional[int] = SEED,
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="Sweep definition YAML (configs/sweeps/); options given here win."),
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
    as_json: bool = typer.Option(False, "--json", help="Print every grid point's values and KPI estimates (mean, low, high, n) as strict JSON."),
) -> None:
    """Run every combination of the --vary values, replicated, and report each KPI's mean and 95% CI."""
    preset = load_sweep_definition(config) if config else SweepDefinition()
    name = scenario or preset.scenario
    if name is None:
        raise StudyError("give a SCENARIO (or a --config that names one)")
    axes = [parse_vary(item) for item in vary] if vary else preset.axes()
    bounds = parse_targets(targets or preset.targets)
    overrides = {**preset.set, **parse_sets(sets)}
    study = sweep_study(
        name, axes, replications=replications if replications is not None else (preset.replications or 30),
        policy=policy or preset.policy or ANALYST_POLICY,
        seed=seed if seed is not None else preset.seed or 0,
        overrides=overrides,
    )
    shown = kpi or preset.kpi or "service_level"
    check_output_folder(out, "--out")
    counted = [0, study_size(study)]  # replications on disk, of all: what an interruption keeps

    def count(done: int, total: int) -> None:
        counted[:] = [done, total]
        bar(done, total)

    try:
        with executor_scope(None, workers, check_backend(backend), ray_address) as pool, progress_bar("sweep") as bar:
            outcome = run_sweep(study, out, executor=pool, progress=count, command=invocation(ctx), plot_kpi=shown, targets=bounds)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {counted[0]} of {counted[1]} replications kept in {out}; rerun the same command "
                   f"to resume with the {counted[1] - counted[0]} left: {invocation(ctx)}", err=True)
        raise typer.Exit(130) from None
    if as_json:
        print_json({
            "scenario": study.scenario.name, "policy": study.policy, "replications": study.replications,
            "fields": study.fields, "folder": str(outcome.folder), "targets": [str(t) for t in bounds],
            "points": [{"values": p.values, "estimates": {k: e._asdict() for k, e in p.estimates.items()},
                        **({"verdicts": {str(t): t.verdict(p.estimates[t.kpi]) for t in bounds}} if bounds else {})}
                       for p in outcome.points],
            "warnings": list(outcome.warnings),
        })
        return
    console.print(sweep_table(outcome.points, study.fields, shown, bounds, title=_title(study, outcome.folder, overrides), queue=study.headline_queue))
    print_definitions(list(dict.fromkeys([shown, "manager_net"])), kpi_definitions(study.headline_queue, study.scenario.service_level.threshold_minutes))
    if outcome.reused:
        console.print(f"[dim]resumed: {outcome.reused} replications were already in {escape(str(outcome.folder))}, {outcome.ran} run now[/]")
    for warning in outcome.warnings:
        warn(warning)
    written = ", ".join(sorted(p.name for p in outcome.folder.iterdir() if not p.name.startswith(".")))
    console.print(f"[dim]{outcome.elapsed_seconds:.1f} s · wrote {escape(str(outcome.folder))}/: {escape(written)}[/]", highlight=False, soft_wrap=True)


def study_size(study: SweepStudy) -> int:
    """How many replications the sweep runs in all (every grid point's)."""
    return len(study.points) * study.replications


def _title(study: SweepStudy, folder: Path, overrides: dict) -> str:
    title = f"{study.scenario.name} · policy={study.policy} · {study.replications} replications · mean [95% CI] · {folder}"
    return with_overrides(title, overrides)


def sweep_table(
    points: list[PointSummary], fields: list[str], kpi: str, targets: tuple[Target, ...], title: str, queue: str | None = None
) -> Table:
    """One row per grid point: its values, the chosen KPI and the targeted KPIs, with a verdict."""
    shown = list(dict.fromkeys([kpi, *(t.kpi for t in targets), "manager_net"]))  # the plan's money beside it
    table = Table(title=title, title_justify="left")
    for name in (*fields, *(queue_label(k, queue) for k in shown)):
        table.add_column(name, justify="right")
    if targets:
        table.add_column("targets", justify="left")
    for point in points:
        cells = [format_value(point.values[f]) for f in fields] + [str(point.estimates[k]) for k in shown]
        if targets:
            verdicts = {t.verdict(point.estimates[t.kpi]) for t in targets}
            cells.append("missed" if "missed" in verdicts else "undecided" if "undecided" in verdicts else "met")
        table.add_row(*cells)
    return table
