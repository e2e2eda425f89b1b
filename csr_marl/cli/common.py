"""Shared CLI plumbing: one-line errors with exit code 2, ``--set key=value`` parsing, tables."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Iterable, TypeVar

import typer
import yaml
from rich.console import Console
from rich.table import Table

from ..config.loading import ScenarioError
from ..whatif.baselines import HEADLINE, BaselineRow, plus_minus

console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def friendly_errors(command: F) -> F:
    """Turn the errors users cause into one clear line and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (ScenarioError, UsageError) as exc:
            fail(str(exc))
        except ValueError as exc:  # e.g. unknown policy names
            fail(str(exc))

    return wrapper  # type: ignore[return-value]


def parse_sets(items: Iterable[str] | None) -> dict[str, Any]:
    """``["staffing.resolver=5", "customers.patience=null"]`` -> overrides (values parsed as YAML)."""
    return parse_key_values(items, "--set", "staffing.resolver=5")


def parse_key_values(items: Iterable[str] | None, option: str, example: str) -> dict[str, Any]:
    """Repeated ``option KEY=VALUE`` items -> ``{KEY: VALUE parsed as YAML}`` (an empty VALUE is None)."""
    values: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE, e.g. {example}")
        try:
            values[key.strip()] = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise UsageError(f"{option} {item!r}: the value is not valid YAML") from None
    return values


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def kpi_table(title: str, rows: dict[str, Any], definitions: dict[str, str] | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("KPI")
    table.add_column("value", justify="right")
    if definitions:
        table.add_column("definition", style="dim")
    for key, value in rows.items():
        cells = [key, fmt(value)]
        if definitions:
            cells.append(definitions.get(key, ""))
        table.add_row(*cells)
    return table


def estimates_table(title: str, label: str, rows: Iterable[BaselineRow], name: Callable[[BaselineRow], str]) -> Table:
    """One row per baseline row: its ``name`` under ``label``, then ``mean ± half-width`` per headline KPI."""
    table = Table(title=title, title_justify="left")
    for column in (label, *HEADLINE):
        table.add_column(column, justify="left" if column == label else "right")
    for row in rows:
        table.add_row(name(row), *(plus_minus(row.estimates[k]) for k in HEADLINE))
    return table
