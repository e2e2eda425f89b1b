"""The analyst's defaults: one team for the CLI and Python, analyst KPIs first, and answers that explain themselves."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import csr_marl
from csr_marl.cli import app
from csr_marl.whatif import parse_targets, search_staffing

runner = CliRunner()
SHORT = ["--set", "horizon_minutes=60"]


def test_cli_and_python_simulate_use_the_same_default_team() -> None:
    cli = json.loads(runner.invoke(app, ["simulate", "standard_day", *SHORT, "--json"]).stdout)
    python = csr_marl.simulate("standard_day", overrides={"horizon_minutes": 60})
    assert cli["policy"] == "expert"
    assert cli["kpis"]["sla_attainment"] == python.kpis["sla_attainment"]
    assert python.kpis == csr_marl.simulate("standard_day", "expert", overrides={"horizon_minutes": 60}).kpis


def test_kpi_table_shows_analyst_kpis_and_the_learning_columns_behind_a_flag() -> None:
    plain = runner.invoke(app, ["simulate", "standard_day", *SHORT])
    assert plain.exit_code == 0, plain.output
    assert "sla_attainment" in plain.output
    for column in ("team_return", "reply_score_mean", "sentiment_mean"):
        assert column not in plain.output
    full = runner.invoke(app, ["simulate", "standard_day", *SHORT, "--all"])
    for column in ("team_return", "reply_score_mean", "sentiment_mean"):
        assert f"{column} " in full.output and f"{column}:" in full.output  # a row, and its definition


def test_an_answer_below_the_offered_load_says_why() -> None:
    answer = search_staffing("standard_day", parse_targets(["sla_attainment>=0.8"]), ["resolver"],
                             overrides={"horizon_minutes": 120}, workers=1, max_replications=10)
    role = answer.roles[0]
    assert role.headcount < role.erlang.peak_load
    note = next(n for n in answer.notes if "below the peak offered load" in n)
    assert f"resolver={role.headcount}" in note and "sla_attainment counts only contacts" in note


def test_a_scenario_carries_its_opening_time_and_tables_print_clock_times() -> None:
    assert csr_marl.load_scenario("validation/mmc").opens_at == "00:00"
    night = csr_marl.load_scenario("night_shift", {"opens_at": 1260})  # YAML 1.1 reads 21:00 as 1260
    assert night.opens_at == "21:00" and night.clock(210) == "00:30"
    shown = runner.invoke(app, ["simulate", "validation/mmc", "--set", "horizon_minutes=90", "--set", "opens_at=08:30"])
    assert shown.exit_code == 0, shown.output
    assert all(time in shown.output for time in ("08:30", "09:00", "09:30"))
    bad = runner.invoke(app, ["simulate", "validation/mmc", "--set", "opens_at=25:00"])
    assert bad.exit_code == 2 and "opens_at" in bad.output


def test_schedule_rows_and_requirements_carry_clock_times() -> None:
    from csr_marl.whatif.schedule import schedule_rows, shift_templates, solve_schedule

    templates = shift_templates(starts=[0, 30], lengths=[60], breaks={}, width=30, horizon=90)
    schedule = solve_schedule({"resolver": [1, 2, 1]}, templates, width=30)
    rows = schedule_rows(schedule, "08:00")
    assert [(r["start_time"], r["end_time"]) for r in rows] == [("08:00", "09:00"), ("08:30", "09:30")]
