"""The ``csr-marl`` command: scenarios, simulate, and the what-if tools.

Commands are imported lazily: ``csr-marl --help`` and ``csr-marl --version`` load typer alone, and a
command's module (with numpy, SimPy, the envs...) is imported only when that command runs or shows its
own help. The one-line summaries listed by ``csr-marl --help`` are written here, and a test checks
that each is the first line of its command's docstring.

To add a command, add a :class:`LazyCommand` to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo

from .. import __version__

try:  # Typer vendors its Click (typer._click) in recent releases: catch the exceptions it raises
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - Typer on Click
    from click import exceptions as click_errors

# The exceptions main() turns into one line, named so that every typer in the declared range has them:
# Abort and Exit are typer's own names (its own classes since typer vendors Click, Click's before);
# NoArgsIsHelpError came with Click 8.2 (before it, no arguments printed the help and exited 0).
_NO_ARGS = getattr(click_errors, "NoArgsIsHelpError", ())
_USAGE = click_errors.UsageError
_CLICK_ERROR = click_errors.ClickException
_ABORT = typer.Abort
TRACEBACK_VARIABLE = "CSR_MARL_TRACEBACK"  # set to 1: an unexpected error shows its traceback


@dataclass(frozen=True)
class LazyCommand:
    """A command named on the command line, found as ``csr_marl.cli.<module>.<function>`` when used."""

    name: str
    module: str
    function: str
    summary: str


COMMANDS: tuple[LazyCommand, ...] = (
    LazyCommand("scenarios", "simulate", "scenarios_command", "List the scenarios shipped with csr_marl."),
    LazyCommand("simulate", "simulate", "simulate_command", "Run one episode with a built-in or trained policy and print the KPI table and the interval table."),
    LazyCommand("sweep", "sweep", "sweep_command", "Run every combination of the --vary values, replicated, and report each KPI's mean and 95% CI."),
    LazyCommand("staff", "staff", "staff_command", "Start from the Erlang estimate, simulate until the CIs settle, report the least headcount per role."),
    LazyCommand("forecast", "forecast", "forecast_command", "Per-interval agents from a forecast: Erlang with shrinkage and occupancy at once, simulation with --simulate."),
    LazyCommand("schedule", "schedule", "schedule_command", "Turn per-interval requirements into shifts with CP-SAT, simulate the schedule, report interval SL vs target."),
    LazyCommand("calibrate", "calibrate", "calibrate_command", "Fit a scenario to a contact log: arrivals per interval, handle times, patience, tier and category mixes."),
    LazyCommand("erlang", "erlang", "erlang_command", "Agents needed for a service-level goal in one interval, with P(wait), ASA, occupancy (and abandonment)."),
    LazyCommand("baseline", "baseline", "baseline_command", "Run a built-in or trained policy for several episodes per scenario; print and write the table."),
    LazyCommand("train", "train", "train_command", "Train every role of a scenario on CPU; write checkpoint.pt, curve.csv, curve.png and run.json."),
    LazyCommand("evaluate", "train", "evaluate_command", "Score a trained team as `csr-marl baseline` scores the built-in policies (same seeds, same KPIs)."),
    LazyCommand("agent", "agent", "agent_command", "Play episodes with a chat model on some roles; print the [START]/[STEP]/[END] log, the table, pass^k."),
    LazyCommand("serve", "serve", "serve_command", "Serve the contact center to OpenEnv clients: text turns in, tool calls out, over a WebSocket per session."),
    LazyCommand("models", "models", "models_command", "Fetch a local model into the cache (sha256-checked), serve it on /v1/chat/completions, or list them."),
)


@dataclass(frozen=True)
class _Listed:
    """What the top-level help reads of a command it lists (no import of the command's module)."""

    name: str
    help: str
    hidden: bool = False
    deprecated: bool = False
    rich_help_panel: Optional[str] = None

    @property
    def short_help(self) -> str:
        return self.help

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.help


def plain_metavars(params: list[Any]) -> list[Any]:
    """Metavars as click and most tools print them: ``SCENARIO``, ``--seed INTEGER``, ``--json`` (no ``<bool>``)."""
    for param in params:
        if getattr(param, "_plain_metavar", False):
            continue
        if param.param_type_name == "argument":
            param.metavar = name = (param.name or "arg").upper()
            usage = name if param.required else f"[{name}]"
            # typer writes a required argument as {name} and its type as <str>: click's SCENARIO instead
            param._usage_display_name = lambda usage=usage: usage
            param.display_type_rich = lambda ctx=None: None
        elif param.param_type_name == "option":
            if param.is_flag or param.count:
                param.metavar = ""
            elif param.metavar is None:
                param.metavar = _type_metavar(param)
        param._plain_metavar = True  # type: ignore[attr-defined]
    return params


def _type_metavar(param: Any) -> str:
    """``INTEGER``, ``FLOAT``, ``TEXT``, ``PATH`` or ``[a|b]`` for an option's value."""
    describe = getattr(param, "type_descriptor", None)  # typer >= 0.20 describes types itself
    if describe is None:
        return str(getattr(param.type, "name", "text")).upper()
    if describe.is_choice:
        return "[" + "|".join(str(choice) for choice in describe.choices or ()) + "]"
    if describe.is_path:
        return "PATH"
    label = param.bare_type().removeprefix("list[").removesuffix("]")
    return {"int": "INTEGER", "float": "FLOAT", "str": "TEXT"}.get(label, label.upper())


class PlainCommand(TyperCommand):
    """A typer command whose help shows click-style metavars."""

    def get_params(self, ctx: Any) -> list[Any]:
        return plain_metavars(super().get_params(ctx))


class LazyGroup(TyperGroup):
    """The top-level group: lists :data:`COMMANDS` without importing them; imports one when it is used."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        eager = [name for name in super().list_commands(ctx) if name not in _BY_NAME]
        return [command.name for command in COMMANDS] + eager

    def get_command(self, ctx: Any, cmd_name: str) -> Optional[Any]:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in _BY_NAME:
            return found
        entry = _BY_NAME[cmd_name]
        if self._listing:  # the top-level help needs only the summary
            return _Listed(cmd_name, entry.summary)
        callback = getattr(importlib.import_module(f"{__name__}.{entry.module}"), entry.function)
        command = typer.main.get_command_from_info(
            CommandInfo(name=cmd_name, callback=callback, cls=PlainCommand),
            pretty_exceptions_short=True,
            rich_markup_mode=self.rich_markup_mode,
        )
        self.commands[cmd_name] = command
        return command

    def get_params(self, ctx: Any) -> list[Any]:
        return plain_metavars(super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        """Run the command; Ctrl-C is one line, ``interrupted``, and exit code 130 (typer releases
        differ: some exit 130 in silence, others print ``Aborted!`` and exit 1)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """Run the CLI; a usage error (missing or unknown option, bad value) is one line on stderr,
        ``error: ... (see csr-marl CMD --help)``, with exit code 2, instead of Click's box."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _NO_ARGS as error:
            typer.echo(error.format_message())
            sys.exit(2)
        except _USAGE as error:
            where = error.ctx.command_path if error.ctx is not None else "csr-marl"
            message = " ".join(error.format_message().split())
            typer.echo(f"error: {message} (see {where} --help)", err=True)
            sys.exit(2)
        except _CLICK_ERROR as error:
            typer.echo(f"error: {' '.join(error.format_message().split())}", err=True)
            sys.exit(error.exit_code)
        except (_ABORT, KeyboardInterrupt, EOFError) as error:
            interrupted = isinstance(error, KeyboardInterrupt) or isinstance(error.__context__, KeyboardInterrupt)
            typer.echo("interrupted" if interrupted else "aborted", err=True)
            sys.exit(130 if interrupted else 1)
        except Exception as error:
            if os.environ.get(TRACEBACK_VARIABLE) == "1":
                raise
            message = " ".join(str(error).split()) or "(no message)"
            typer.echo(f"error: {type(error).__name__}: {message} (unexpected: {TRACEBACK_VARIABLE}=1 shows "
                       f"the traceback; please report it)", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


_BY_NAME = {command.name: command for command in COMMANDS}


def _print_version(value: bool) -> None:
    if value:
        from .._core_build import core_description

        typer.echo(f"csr-marl {__version__} ({core_description()})")
        raise typer.Exit()


app = typer.Typer(
    name="csr-marl",
    cls=LazyGroup,
    help="Simulate a customer-service contact center: run scenarios, compare policies, size staffing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Simulate a customer-service contact center: run scenarios, compare policies, size staffing."""


def main() -> None:  # pragma: no cover - console entry
    app()


def command_callback(name: str) -> Any:
    """The function behind ``csr-marl NAME`` (imports its module)."""
    entry = _BY_NAME[name]
    return getattr(importlib.import_module(f"{__name__}.{entry.module}"), entry.function)
