"""``csr-marl staff --forecast FILE.csv``: per-interval requirements from a forecast, Erlang beside simulation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from ..config.scenario import clock_time
from ..whatif.forecast import Forecast, capped, erlang_requirements, forecast_scenario, read_forecast, rostered
from ..whatif.interval_staffing import IntervalPlan, plan_interval_staffing
from ..whatif.store import atomic_write
from .common import console, escape, note, print_json
from .intervals import VERDICT_LEGEND, scenario_yaml, short_estimate, verdict_cell, write_csv


@dataclass(frozen=True)
class Staffing:
    """The options the forecast path shares with ``staff --by-interval``."""

    target: float
    within_seconds: float
    patience_seconds: float | None
    shrinkage: float
    max_occupancy: float | None
    replications: int
    max_replications: int
    hold: bool
    trim_replications: int | None
    seed: int


def staff_forecast(path: Path, options: Staffing, pool: Any, out: Path | None, scenario_out: Path | None,
                   as_json: bool) -> None:
    """Size every queue of the forecast (Erlang and the iterative algorithm) and print or write the rows."""
    forecasts = read_forecast(path)
    rows: list[dict[str, Any]] = []
    payload: dict[str, Any] = {"forecast": str(path), "queues": {}}
    written = []
    for queue, forecast in forecasts.items():
        erlang = erlang_requirements(forecast, options.target, options.within_seconds, patience_seconds=options.patience_seconds,
                                     shrinkage=options.shrinkage, max_occupancy=options.max_occupancy)
        scenario = forecast_scenario(forecast, options.within_seconds, patience_seconds=options.patience_seconds)
        plan = plan_interval_staffing(
            scenario, options.target, ["resolver"], seed=options.seed, replications=options.replications,
            max_replications=options.max_replications, hold=options.hold, trim_replications=options.trim_replications,
            executor=pool, report=note,
        )
        queue_rows = _rows(forecast, erlang, plan, options)
        rows += queue_rows
        payload["queues"][queue] = {"opens_at": forecast.opens_at, "interval_minutes": forecast.width,
                                    "weighted_aht_seconds": forecast.weighted_aht_seconds, "intervals": queue_rows,
                                    "notes": plan.notes}
        if scenario_out is not None:
            target = scenario_out if len(forecasts) == 1 else scenario_out.with_name(f"{scenario_out.stem}_{queue}{scenario_out.suffix}")
            header = f"Written by csr-marl staff --forecast from {path.name}, queue {queue}."
            written.append(str(atomic_write(target, scenario_yaml(scenario, scenario.name, [header]))))
        if not as_json:
            console.print(_table(forecast, queue_rows, plan, options))
    if out is not None:
        written.insert(0, str(write_csv(out, rows)))
    if as_json:
        print_json(payload)
        return
    console.print(f"[dim]{VERDICT_LEGEND}[/]", highlight=False)
    console.print("[dim]on floor: agents answering contacts; rostered: on floor / (1 - shrinkage), rounded up. "
                  "Erlang sizes each interval on its own volume and AHT; the iterative algorithm simulates the day "
                  "(exponential handle times at the volume-weighted AHT).[/]", highlight=False)
    if written:
        console.print(f"[dim]wrote {escape(', '.join(written))}[/]", highlight=False, soft_wrap=True)


def _rows(forecast: Forecast, erlang: list, plan: IntervalPlan, options: Staffing) -> list[dict[str, Any]]:
    loads = [e.load for e in erlang]
    floor = capped(plan.requirements()["resolver"], loads, options.max_occupancy)
    levels = plan.iterative_check.service_level("resolver")
    verdicts = plan.verdicts(plan.iterative_check)
    out = []
    for k, (e, n) in enumerate(zip(erlang, floor)):
        out.append({
            "start_minute": e.start_minute, "end_minute": e.start_minute + forecast.width, "role": "resolver",
            "queue": forecast.queue, "start_time": clock_time(e.start_minute, forecast.opens_at),
            "volume": e.volume, "aht_seconds": e.aht_seconds, "load_erlangs": round(e.load, 4),
            "sipp": e.on_floor, "sipp_rostered": e.rostered,
            "iterative": int(n), "iterative_rostered": rostered(n, options.shrinkage),
            "service_level_iterative": round(levels[k].mean, 4), "service_level_low": round(levels[k].low, 4),
            "service_level_high": round(levels[k].high, 4), "verdict": verdicts[k],
            "replications": plan.iterative_check.replications,
        })
    return out


def _table(forecast: Forecast, rows: list[dict[str, Any]], plan: IntervalPlan, options: Staffing) -> Table:
    model = "Erlang A" if options.patience_seconds is not None else "Erlang C"
    table = Table(
        title=f"queue {forecast.queue} · target service level >= {options.target:g} within {options.within_seconds:g} s · "
        f"shrinkage {options.shrinkage:.0%}" + (f" · occupancy <= {options.max_occupancy:.0%}" if options.max_occupancy else "")
        + f" · agents on the floor/rostered · SL: the iterative plan simulated, mean [95% CI] over "
        f"{plan.iterative_check.replications} replications",
        title_justify="left",
    )
    for header in ("time", "volume", "AHT s", "load", model, "iterative", "SL iterative"):
        table.add_column(header, justify="left" if header == "time" else "right", no_wrap=True)
    levels = plan.iterative_check.service_level("resolver")
    for k, row in enumerate(rows):
        table.add_row(
            row["start_time"], f"{row['volume']:g}", f"{row['aht_seconds']:g}", f"{row['load_erlangs']:.2f}",
            f"{row['sipp']}/{row['sipp_rostered']}", f"{row['iterative']}/{row['iterative_rostered']}",
            verdict_cell(short_estimate(levels[k]), row["verdict"]),
        )
    return table
