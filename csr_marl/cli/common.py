"""Shared CLI plumbing: one-line errors with exit code 2, ``--set key=value`` parsing, tables, strict
JSON, progress.

Conventions every command follows:

* **Errors** are one line on stderr (``error: ...``) and exit code 2.
* **JSON** (``--json``) is strict: NaN and infinities, which JSON has no words for, are written as
  ``null`` (a KPI that was not measured, e.g. the ASA of a queue nobody entered).
* **Progress** of long work goes to stderr: a bar on a terminal, else a plain line every
  :data:`PROGRESS_EVERY_SECONDS` (and at the end), so a log or CI job shows the run is alive.
* **Tables** fit 80 columns; abbreviations in a header are defined under the table; ``--set``
  overrides are shown in the title.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..config.loading import ScenarioError, parse_yaml
from ..sim.kpis import kpi_definitions
from ..whatif.baselines import HEADLINE, BaselineRow, plus_minus
from ..whatif.store import json_safe

console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])
TABLE_WIDTH = 80
PROGRESS_EVERY_SECONDS = 10.0


class UsageError(ValueError):
    """Bad command-line input; printed as one line, exit code 2."""


def one_line(message: str) -> str:
    """``message`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(str(message).split())


def fail(message: str) -> None:
    """Print ``error: message`` as one line on stderr and exit with code 2."""
    # escape(): a message may hold brackets, e.g. pip install 'csr-marl[plot]', that rich would eat.
    err_console.print(f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def warn(message: str) -> None:
    """Print ``warning: message`` as one line on stderr."""
    err_console.print(f"[yellow]warning:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True)


def note(message: str) -> None:
    """A progress or status line on stderr (dim on a terminal, plain text in a log)."""
    err_console.print(f"[dim]{escape(message)}[/]", highlight=False, soft_wrap=True)


def print_json(payload: Any) -> None:
    """Print ``payload`` as strict JSON: NaN and infinities become ``null``; numpy values become numbers."""
    print(json.dumps(json_safe(payload), indent=2, allow_nan=False, default=_json_value))


def _json_value(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return json_safe(value.tolist())
    return str(value)


HEADLINE_WAITS = ("service_level", "p_wait", "asa_minutes", "wait_p50_minutes", "wait_p90_minutes", "wait_p99_minutes")


def queue_label(kpi: str, queue: str | None) -> str:
    """A headline wait KPI with the queue it measures beside it: ``service_level (resolver queue)``."""
    return f"{kpi} ({queue} queue)" if queue and kpi in HEADLINE_WAITS else kpi


def with_overrides(title: str, overrides: Mapping[str, Any] | None) -> str:
    """A table title with the ``--set`` overrides the run used, so a pasted table says what it shows."""
    if not overrides:
        return title
    return f"{title} · set " + ", ".join(f"{key}={_override_value(value)}" for key, value in overrides.items())


def _override_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else "null" if value is None else str(value)


@contextlib.contextmanager
def progress_bar(description: str, unit: str = "runs") -> Iterator[Callable[[int, int], None]]:
    """Report ``done/total`` of long work on stderr: a rich bar on a terminal, else plain lines.

    Plain lines come at most every :data:`PROGRESS_EVERY_SECONDS` seconds and once at the end, e.g.
    ``sweep: 40/200 runs (20%), 12 s``.
    """
    if err_console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err_console, transient=True) as bar:
            task = bar.add_task(description, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    started = last = time.monotonic()

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done < total and now - last < PROGRESS_EVERY_SECONDS:
            return
        last = now
        share = f" ({done / total:.0%})" if total else ""
        print(f"{description}: {done}/{total} {unit}{share}, {now - started:.0f} s", file=sys.stderr, flush=True)

    yield report


def _show_warning(message: Warning | str, *_args: Any, **_kwargs: Any) -> None:
    warn(str(message))


def friendly_errors(command: F) -> F:
    """Turn the errors users cause into one clear line and exit code 2; warnings into one line each.

    Filesystem errors (a missing folder, a read-only or full disk) are user errors too.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _show_warning
            try:
                return command(*args, **kwargs)
            except (ScenarioError, UsageError) as exc:
                fail(str(exc))
            except ValueError as exc:  # e.g. unknown policy names
                fail(str(exc))
            except OSError as exc:
                fail(describe_os_error(exc))

    return wrapper  # type: ignore[return-value]


def describe_os_error(error: OSError) -> str:
    """``path: reason`` for a filesystem error (no traceback)."""
    if error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error.strerror or error)


def check_output_file(path: Path, option: str, suffixes: Sequence[str] = (), *, replace: bool = True) -> Path:
    """Refuse, before any work, an output file that cannot be written (a read-only folder, or a file in
    the way of a folder to create), or, without ``replace``, one that exists already (the caller's
    ``--force`` replaces it). Missing folders are created when the file is written."""
    path = Path(path)
    if suffixes and path.suffix not in suffixes:
        raise UsageError(f"{option} {path}: use a {' or '.join(suffixes)} file")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder, expected a file")
    if not replace and path.exists():
        raise UsageError(f"{option} {path}: exists already; choose a new file, or pass --force to replace it")
    _probe_folder(_nearest_existing(path.parent), f"{option} {path}")
    return path


def check_output_folder(path: Path, option: str) -> Path:
    """Refuse, before any work, an output folder that cannot be created or written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: exists and is not a folder")
    _probe_folder(_nearest_existing(path), f"{option} {path}")
    return path


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (the folder a missing output folder is made in)."""
    existing = path if str(path) else Path(".")
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing


def _probe_folder(folder: Path, what: str) -> None:
    """Create and delete a file in ``folder``: the only test that also holds for root and full disks."""
    if not folder.is_dir():
        raise UsageError(f"{what}: {folder} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".csr-marl-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in {folder} ({exc.strerror or exc})") from None


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
            values[key.strip()] = parse_yaml(raw, f"{option} {key.strip()}") if raw.strip() else None
        except ScenarioError as exc:
            raise UsageError(str(exc)) from None
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


def print_estimates(title: str, label: str, rows: Iterable[BaselineRow], name: Callable[[BaselineRow], str]) -> None:
    """The headline KPIs of baseline-style rows as a table that fits 80 columns, each KPI defined under it.

    KPIs not measured in any row (no resolvers, no replies...) are left out, and so are KPIs that are
    exactly 0 in every episode of every row; both are named under the table.
    """
    rows = list(rows)
    unmeasured = [k for k in HEADLINE if all(row.estimates[k].n == 0 for row in rows)]
    zero = [
        k for k in HEADLINE
        if k not in unmeasured and all(row.estimates[k].n == 0 or (row.estimates[k].mean == 0 and row.estimates[k].half_width == 0) for row in rows)
    ]
    shown = [k for k in HEADLINE if k not in unmeasured and k not in zero]
    console.print(estimates_table(title, label, rows, name, kpis=shown))
    print_definitions(shown)
    if zero:
        note(f"0 in every episode: {', '.join(zero)}")
    if unmeasured:
        note(f"not measured here: {', '.join(unmeasured)}")


def estimates_table(
    title: str, label: str, rows: Iterable[BaselineRow], name: Callable[[BaselineRow], str], width: int | None = None,
    kpis: Sequence[str] = HEADLINE,
) -> RenderableType:
    """``mean ± half-width`` of each headline KPI per baseline row, laid out to fit ``width`` columns.

    One row per entry when that fits; else one column per entry (KPIs down the side); else one small
    table per entry. A table squeezed below its content is unreadable (cells cut to "scen…").
    """
    rows = list(rows)
    width = width or table_width()
    cells = {name(row): [plus_minus(row.estimates[k]) for k in kpis] for row in rows}
    wide = [max(len(label), *(len(n) for n in cells))] + [
        max(len(k), *(len(c[i]) for c in cells.values())) for i, k in enumerate(kpis)
    ]
    if _fits(wide, width):
        table = Table(title=title, title_justify="left")
        for column in (label, *kpis):
            table.add_column(column, justify="left" if column == label else "right", no_wrap=True)
        for entry, values in cells.items():
            table.add_row(entry, *values)
        return table
    tall = [max(len("KPI"), *(len(k) for k in kpis))] + [
        max(len(entry), *(len(v) for v in values)) for entry, values in cells.items()
    ]
    if _fits(tall, width):
        table = Table(title=title, title_justify="left")
        table.add_column("KPI", no_wrap=True)
        for entry in cells:
            table.add_column(entry, justify="right", no_wrap=True)
        for i, kpi in enumerate(kpis):
            table.add_row(kpi, *(values[i] for values in cells.values()))
        return table
    parts: list[RenderableType] = [Text(title)]
    for entry, values in cells.items():
        table = Table(title=f"{label} {entry}", title_justify="left")
        table.add_column("KPI", no_wrap=True)
        table.add_column("mean ± 95% CI", justify="right", no_wrap=True)
        for kpi, value in zip(kpis, values):
            table.add_row(kpi, value)
        parts.append(table)
    return Group(*parts)


def print_definitions(names: Iterable[str], definitions: Mapping[str, str] | None = None) -> None:
    """One dim line per KPI saying what it measures (which queue, which threshold)."""
    definitions = definitions or kpi_definitions()
    for kpi in names:
        if kpi in definitions:
            console.print(f"[dim]{escape(kpi)}: {escape(definitions[kpi])}[/]", highlight=False, width=table_width())


def table_width() -> int:
    """The width tables are laid out for: the terminal's, at most 80 columns."""
    return min(console.width, TABLE_WIDTH)


def abbreviations(defined: Mapping[str, str]) -> None:
    """Define a table's abbreviated headers on one dim line each, under the table."""
    for short, meaning in defined.items():
        console.print(f"[dim]{escape(short)} = {escape(meaning)}[/]", highlight=False, width=table_width())


def _fits(column_widths: Sequence[int], width: int) -> bool:
    """Whether a rich table with these content widths (padding and borders added) fits ``width``."""
    return sum(column_widths) + 3 * len(column_widths) + 1 <= width
