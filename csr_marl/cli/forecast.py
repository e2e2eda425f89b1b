"""``csr-marl forecast FILE.csv``: per-interval requirements from a forecast, Erlang at once, simulation on request.

Without ``--simulate`` every interval is sized analytically (Erlang C, Erlang A with a patience) on its
own volume and AHT, with the occupancy cap and shrinkage: instant. ``--simulate`` also plans the day
by simulation (:func:`csr_marl.whatif.interval_planner.plan_intervals`), each interval's contacts
handled at that interval's own AHT. ``csr-marl staff --forecast FILE.csv`` is the same as
``--simulate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..config.scenario import clock_time
from ..whatif import parse_targets
from ..whatif.executors import executor_scope
from ..whatif.forecast import (
    ErlangRequirement,
    Forecast,
    capped,
    erlang_requirements,
    forecast_scenario,
    read_forecast,
    rostered,
)
from ..whatif.interval_planner import MAX_REPLICATIONS, REPLICATIONS, plan_intervals
from ..whatif.interval_staffing import IntervalPlan
from ..whatif.store import atomic_write
from .common import check_output_file, console, escape, friendly_errors, note, print_json
from .intervals import VERDICT_LEGEND, interval_target, scenario_yaml, short_estimate, verdict_cell, write_csv
from .sweep import BACKEND, RAY_ADDRESS, SEED, TARGETS, WORKERS, check_backend


@dataclass(frozen=True)
class Staffing:
    """The options the forecast path shares with ``staff --forecast``."""

    target: float
    within_seconds: float
    patience_seconds: float | None
    shrinkage: float
    max_occupancy: float | None
    replications: int
    max_replications: int
    seed: int


@friendly_errors
def forecast_command(
    path: Path = typer.Argument(..., help="Forecast CSV: interval (HH:MM or minute), volume, aht_seconds or aht_minutes, optional queue."),
    targets: Optional[list[str]] = TARGETS,
    within_seconds: float = typer.Option(20.0, "--within-seconds", help="The service level's threshold."),
    patience_seconds: Optional[float] = typer.Option(None, "--patience-seconds", min=0.001, help="Mean patience: Erlang A (and abandonment in the simulation)."),
    shrinkage: float = typer.Option(0.0, "--shrinkage", min=0.0, max=0.99, help="Share of paid time off the floor (0.3 = 30%): rostered heads = on floor / (1 - shrinkage)."),
    max_occupancy: Optional[float] = typer.Option(None, "--max-occupancy", min=0.01, max=1.0, help="Occupancy cap, e.g. 0.85: at least load / cap on the floor."),
    simulate: bool = typer.Option(False, "--simulate", help="Also plan the day by simulation (each interval at its own AHT) and show each interval's simulated service level."),
    replications: int = typer.Option(REPLICATIONS, "--replications", "-r", min=2, help="--simulate: replications each simulation round and the check start with."),
    max_replications: int = typer.Option(MAX_REPLICATIONS, "--max-replications", min=2, help="--simulate: the most replications of a round and of the check."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the requirements CSV (csr-marl schedule --requirements reads it)."),
    scenario_out: Optional[Path] = typer.Option(None, "--scenario-out", help="Write the scenario that simulates the forecast (YAML), for csr-marl schedule and simulate."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    seed: Optional[int] = SEED,
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
) -> None:
    """Per-interval agents from a forecast: Erlang with shrinkage and occupancy at once, simulation with --simulate."""
    for file, option, suffix in ((out, "--out", ".csv"), (scenario_out, "--scenario-out", ".yaml")):
        if file is not None:
            check_output_file(file, option, (suffix,))
    options = Staffing(interval_target(parse_targets(targets)), within_seconds, patience_seconds, shrinkage,
                       max_occupancy, replications, max(replications, max_replications), seed or 0)
    if not simulate:
        staff_forecast(path, options, None, out, scenario_out, as_json, simulate=False)
        return
    with executor_scope(None, workers, check_backend(backend), ray_address) as pool:
        staff_forecast(path, options, pool, out, scenario_out, as_json, simulate=True)


def staff_forecast(path: Path, options: Staffing, pool: Any, out: Path | None, scenario_out: Path | None,
                   as_json: bool, *, simulate: bool) -> None:
    """Size every queue of the forecast (Erlang, and with ``simulate`` the planner) and print or write the rows."""
    forecasts = read_forecast(path)
    rows: list[dict[str, Any]] = []
    payload: dict[str, Any] = {"forecast": str(path), "queues": {}}
    written = []
    for queue, forecast in forecasts.items():
        erlang = erlang_requirements(forecast, options.target, options.within_seconds, patience_seconds=options.patience_seconds,
                                     shrinkage=options.shrinkage, max_occupancy=options.max_occupancy)
        scenario = forecast_scenario(forecast, options.within_seconds, patience_seconds=options.patience_seconds)
        plan = None
        if simulate:
            mean = forecast.weighted_aht_seconds
            plan = plan_intervals(
                scenario, options.target, ["resolver"], seed=options.seed, replications=options.replications,
                max_replications=options.max_replications, executor=pool, report=note,
                handle_scale=[i.aht_seconds / mean if mean else 1.0 for i in forecast.intervals],
            )
        queue_rows = _rows(forecast, erlang, plan, options)
        rows += queue_rows
        payload["queues"][queue] = {"opens_at": forecast.opens_at, "interval_minutes": forecast.width,
                                    "weighted_aht_seconds": forecast.weighted_aht_seconds, "intervals": queue_rows,
                                    "notes": plan.notes if plan else []}
        if scenario_out is not None:
            target = scenario_out if len(forecasts) == 1 else scenario_out.with_name(f"{scenario_out.stem}_{queue}{scenario_out.suffix}")
            header = (f"Written by csr-marl forecast from {path.name}, queue {queue}; handle times at the "
                      "volume-weighted AHT (the forecast's per-interval AHT is not carried by the scenario).")
            written.append(str(atomic_write(target, scenario_yaml(scenario, scenario.name, [header]))))
        if not as_json:
            console.print(_table(forecast, queue_rows, plan, options))
    if out is not None:
        written.insert(0, str(write_csv(out, rows)))
    if as_json:
        print_json(payload)
        return
    if simulate:
        console.print(f"[dim]{VERDICT_LEGEND}[/]", highlight=False)
    console.print("[dim]on floor: agents answering contacts; rostered: on floor / (1 - shrinkage), rounded up; occ: "
                  "the load over the agents on the floor. Erlang sizes each interval on its own volume and AHT"
                  + ("; the plan simulates the day, each interval's contacts at its own AHT" if simulate else
                     "; --simulate also plans the day by simulation") + ".[/]", highlight=False)
    if written:
        console.print(f"[dim]wrote {escape(', '.join(written))}[/]", highlight=False, soft_wrap=True)


def _rows(forecast: Forecast, erlang: list[ErlangRequirement], plan: IntervalPlan | None,
          options: Staffing) -> list[dict[str, Any]]:
    """One row per interval: Erlang's requirement (``sipp``), and the simulated plan's (``iterative``)
    when there is one, else Erlang's again (``csr-marl schedule --requirements`` reads that column)."""
    loads = [e.load for e in erlang]
    floor = capped(plan.requirements()["resolver"], loads, options.max_occupancy) if plan else [e.on_floor for e in erlang]
    out = []
    for k, (e, n) in enumerate(zip(erlang, floor)):
        row = {
            "start_minute": e.start_minute, "end_minute": e.start_minute + forecast.width, "role": "resolver",
            "queue": forecast.queue, "start_time": clock_time(e.start_minute, forecast.opens_at),
            "volume": e.volume, "aht_seconds": e.aht_seconds, "load_erlangs": round(e.load, 4),
            "occupancy": round(e.load / e.on_floor, 4) if e.on_floor else None,
            "sipp": e.on_floor, "sipp_rostered": e.rostered,
            "iterative": int(n), "iterative_rostered": rostered(n, options.shrinkage),
        }
        if plan is not None:
            level = plan.iterative_check.service_level("resolver")[k]
            row.update({"service_level_iterative": round(level.mean, 4), "service_level_low": round(level.low, 4),
                        "service_level_high": round(level.high, 4),
                        "verdict": plan.verdicts(plan.iterative_check)[k],
                        "replications": plan.iterative_check.replications})
        out.append(row)
    return out


def _table(forecast: Forecast, rows: list[dict[str, Any]], plan: IntervalPlan | None, options: Staffing) -> Table:
    model = "Erlang A" if options.patience_seconds is not None else "Erlang C"
    simulated = (f" · plan: simulated, SL mean [95% CI] over {plan.iterative_check.replications} replications"
                 if plan else "")
    table = Table(
        title=f"queue {forecast.queue} · target service level >= {options.target:g} within {options.within_seconds:g} s · "
        f"shrinkage {options.shrinkage:.0%}" + (f" · occupancy <= {options.max_occupancy:.0%}" if options.max_occupancy else "")
        + " · agents on the floor/rostered" + simulated,
        title_justify="left",
    )
    headers = ["time", "volume", "AHT s", "load", model, "occ"] + (["plan", "SL plan"] if plan else [])
    for header in headers:
        table.add_column(header, justify="left" if header == "time" else "right", no_wrap=True)
    levels = plan.iterative_check.service_level("resolver") if plan else []
    for k, row in enumerate(rows):
        occupancy = "–" if row["occupancy"] is None else f"{row['occupancy']:.0%}"
        cells = [row["start_time"], f"{row['volume']:g}", f"{row['aht_seconds']:g}", f"{row['load_erlangs']:.2f}",
                 f"{row['sipp']}/{row['sipp_rostered']}", occupancy]
        if plan:
            cells += [f"{row['iterative']}/{row['iterative_rostered']}",
                      verdict_cell(short_estimate(levels[k]), row["verdict"])]
        table.add_row(*cells)
    return table
