"""``csr-marl erlang``: the analytic staffing table (Erlang C, or Erlang A with patience)."""

from __future__ import annotations

import dataclasses
from typing import Optional

import typer
from rich.table import Table

from ..whatif import erlang_table
from ..whatif.erlang_table import SL_DEFINITION
from .common import abbreviations, console, friendly_errors, print_json


@friendly_errors
def erlang_command(
    volume: float = typer.Option(..., "--volume", help="Contacts offered in the interval."),
    interval_minutes: float = typer.Option(30.0, "--interval-minutes", help="Length of the interval."),
    aht_seconds: float = typer.Option(..., "--aht-seconds", help="Average handle time."),
    target_sl: float = typer.Option(0.8, "--target-sl", help="Service-level goal as a fraction (0.8 = 80%)."),
    within_seconds: float = typer.Option(20.0, "--within-seconds", help="Service-level threshold."),
    patience_seconds: Optional[float] = typer.Option(None, "--patience-seconds", help="Mean patience: adds abandonment (Erlang A)."),
    shrinkage: float = typer.Option(0.0, "--shrinkage", help="Share of paid time not on the phones (0.3 = 30%)."),
    max_occupancy: Optional[float] = typer.Option(None, "--max-occupancy", help="Occupancy cap, e.g. 0.85."),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Agents needed for a service-level goal in one interval, with P(wait), ASA, occupancy (and abandonment)."""
    table = erlang_table(
        volume, interval_minutes, aht_seconds, target_sl, within_seconds,
        patience_seconds=patience_seconds, shrinkage=shrinkage, max_occupancy=max_occupancy,
    )
    if as_json:
        print_json(dataclasses.asdict(table))
        return
    patience = table.patience_seconds is not None
    title = (
        f"{table.model} · {volume:g} contacts / {interval_minutes:g} min · AHT {aht_seconds:g} s · "
        f"offered load {table.offered_load:.2f} Erlangs · goal {target_sl:.0%} within {within_seconds:g} s"
        + (f" · patience {table.patience_seconds:g} s" if patience else "")
    )
    out = Table(title=title, title_justify="left")
    for column in ("agents", "P(wait)", "ASA (s)", "service level", "occupancy", *(["abandoned"] if patience else []), ""):
        out.add_column(column, justify="right" if column else "left")
    for row in table.rows:
        cells = [str(row.agents), f"{row.p_wait:.1%}", f"{row.asa_seconds:.1f}", f"{row.service_level:.1%}", f"{row.occupancy:.1%}"]
        if patience:
            cells.append(f"{row.p_abandon:.1%}")
        mark = "◀ required" if row.agents == table.required_agents else ("meets goal" if row.meets_service_level and row.within_occupancy else "")
        if row.meets_service_level and not row.within_occupancy:
            mark = "over occupancy cap"
        out.add_row(*cells, mark, style="bold" if row.agents == table.required_agents else None)
    console.print(out)
    lines = [f"agents for the service level: {table.agents_for_service_level}"]
    if table.max_occupancy is not None:
        lines.append(f"with occupancy <= {table.max_occupancy:.0%}: {table.required_agents}")
    lines.append(f"scheduled with {table.shrinkage:.0%} shrinkage: [bold]{table.scheduled_agents}[/] (required / (1 - shrinkage))")
    console.print(" · ".join(lines), highlight=False)
    console.print(f"[dim]{SL_DEFINITION}[/]")
    abbreviations({"P(wait)": "probability that a contact waits at all", "ASA": "average speed of answer: mean wait of answered contacts",
                   "occupancy": "share of the agents' time busy with contacts"})
