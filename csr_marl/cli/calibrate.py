"""``csr-marl calibrate contacts.csv``: a scenario from a contact log (extra ``csr-marl[analyst]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..config.loading import load_scenario
from ..whatif.calibrate import calibrate, calibration_overrides, calibration_report, read_contact_log
from ..whatif.contact_log import printable
from ..whatif.store import atomic_write
from .common import check_output_file, console, escape, friendly_errors, parse_sets, print_json
from .intervals import scenario_yaml


@friendly_errors
def calibrate_command(
    contacts: Path = typer.Argument(..., help="Contact log CSV: arrival, answered, end, abandoned (+ optional day, queue, category, tier)."),
    out: Path = typer.Option(..., "--out", "-o", help="The scenario YAML to write."),
    base: str = typer.Option("validation/mmc", "--base", help="Scenario whose other settings (ticket bank, threshold, rewards) the calibrated one keeps."),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the calibrated scenario. \\[default: the file's stem]"),
    interval: int = typer.Option(30, "--interval", help="Interval of the arrival profile: 15, 30 or 60 minutes."),
    horizon: Optional[float] = typer.Option(None, "--horizon", help="Minutes in a day, at most 10080 (a week). \\[default: up to the last arrival's interval]"),
    queue: Optional[str] = typer.Option(None, "--queue", help="Which queue's handle-time fit the scenario uses. \\[default: resolver, or the only one]"),
    sets: Optional[list[str]] = typer.Option(None, "--set", help="Override KEY=VALUE on the result (dotted path, YAML value); repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print the estimates as JSON."),
    force: bool = typer.Option(False, "--force", help="Replace --out if it exists."),
) -> None:
    """Fit a scenario to a contact log: arrivals per interval, handle times, patience, tier and category mixes.

    Handle times: exponential / lognormal / gamma chosen by AIC, with a goodness-of-fit line; patience from
    censored waits (Kaplan-Meier and the exponential MLE)."""
    check_output_file(out, "--out", (".yaml", ".yml"), replace=force)
    fit = calibrate(read_contact_log(contacts), interval, horizon)
    source = printable(contacts.name)
    overrides = {
        **calibration_overrides(fit, queue),
        "description": f"Calibrated from {source}: {fit.contacts} contacts over {fit.days} day(s).",
        **parse_sets(sets),
    }
    scenario = load_scenario(base, overrides)  # validates everything before the file is written
    report = calibration_report(fit)
    label = printable(name or out.stem)
    atomic_write(out, scenario_yaml(scenario, label, [f"Calibrated by csr-marl calibrate from {source}:", *report]))
    if as_json:
        print_json({"scenario": str(out), "report": report, "overrides": overrides})
        return
    for line in report:
        console.print(escape(line), highlight=False, soft_wrap=True)
    console.print(f"[dim]wrote {escape(str(out))} (scenario {escape(label)}); try: csr-marl simulate {escape(str(out))}[/]", highlight=False)
