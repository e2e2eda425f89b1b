"""``csr-marl calibrate contacts.csv``: a scenario from a contact log (extra ``csr-marl[analyst]``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config.loading import load_scenario
from ..whatif.calibrate import calibrate, calibration_overrides, calibration_payload, calibration_report, read_contact_log
from ..whatif.contact_log import printable
from ..whatif.errors import StudyError
from ..whatif.parameter_uncertainty import kpis_with_parameter_uncertainty
from ..whatif.summary import Estimate
from ..whatif.store import atomic_write
from .common import check_output_file, console, escape, friendly_errors, parse_sets, print_json
from .intervals import scenario_yaml


OPENS_AT = re.compile(r"([01]\d|2[0-3]):[0-5]\d")


def uncertainty_table(kpis: dict[str, dict[str, Estimate]], replications: int) -> Table:
    """The calibrated scenario's KPIs with the estimates as the truth, and with parameter uncertainty."""
    table = Table(title=f"the calibrated scenario simulated: mean [95% CI] over {replications} replications; drawn: "
                  "the interval carries the parameters' spread",
                  title_justify="left")
    table.add_column("KPI")
    table.add_column("parameters fixed", justify="right")
    table.add_column("parameters drawn", justify="right")
    for name in kpis["fixed"]:
        table.add_row(name, str(kpis["fixed"][name]), str(kpis["drawn"][name]))
    return table


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
    opens_at: Optional[str] = typer.Option(None, "--opens-at", help="HH:MM: each day of a date-time log counts from this opening. \\[default: the most common opening across the days (each day's first arrival's interval); earlier contacts count in the first interval]"),
    check: int = typer.Option(0, "--check", min=0, help="Simulate N replications with the estimates and N with parameters drawn from their fitted distributions; print the KPIs of both."),
    seed: int = typer.Option(0, "--seed", "-s", help="--check: root seed."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", help="--check: parallel worker processes. \\[default: every CPU]"),
    as_json: bool = typer.Option(False, "--json", help="Print the estimates, with their 95% CIs, as JSON."),
    force: bool = typer.Option(False, "--force", help="Replace --out if it exists."),
) -> None:
    """Fit a scenario to a contact log: arrivals per interval, handle times, patience, tier and category mixes.

    Handle times: exponential / lognormal / gamma chosen by AIC, with a goodness-of-fit line; patience from
    censored waits (Kaplan-Meier and the exponential MLE)."""
    check_output_file(out, "--out", (".yaml", ".yml"), replace=force)
    if opens_at is not None and not OPENS_AT.fullmatch(opens_at):
        raise StudyError(f"--opens-at {printable(opens_at)!r}: give a clock time HH:MM, e.g. 08:00")
    fit = calibrate(read_contact_log(contacts, interval, opens_at), interval, horizon)
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
    uncertain = kpis_with_parameter_uncertainty(scenario, fit, check, seed, queue=queue or "resolver", workers=workers) if check else None
    if as_json:
        payload = {"scenario": str(out), "estimates": calibration_payload(fit), "report": report, "overrides": overrides}
        if uncertain is not None:
            payload["check"] = {which: {k: e._asdict() for k, e in kpis.items()} for which, kpis in uncertain.items()}
        print_json(payload)
        return
    for line in report:
        console.print(escape(line), highlight=False, soft_wrap=True)
    if uncertain is not None:
        console.print(uncertainty_table(uncertain, check))
    console.print(f"[dim]wrote {escape(str(out))} (scenario {escape(label)}); try: csr-marl simulate {escape(str(out))}[/]", highlight=False, soft_wrap=True)
