"""The ``csr-marl`` command: scenarios, simulate, and the what-if tools."""

from __future__ import annotations

import typer

from .agent import agent_command
from .baseline import baseline_command
from .calibrate import calibrate_command
from .erlang import erlang_command
from .serve import serve_command
from .simulate import scenarios_command, simulate_command
from .schedule import schedule_command
from .staff import staff_command
from .sweep import sweep_command
from .train import evaluate_command, train_command

app = typer.Typer(
    name="csr-marl",
    help="Simulate a customer-service contact center: run scenarios, compare policies, size staffing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("scenarios")(scenarios_command)
app.command("simulate")(simulate_command)
app.command("sweep")(sweep_command)
app.command("staff")(staff_command)
app.command("schedule")(schedule_command)
app.command("calibrate")(calibrate_command)
app.command("erlang")(erlang_command)
app.command("baseline")(baseline_command)
app.command("train")(train_command)
app.command("evaluate")(evaluate_command)
app.command("agent")(agent_command)
app.command("serve")(serve_command)


def main() -> None:  # pragma: no cover - console entry
    app()
