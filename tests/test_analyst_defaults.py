"""The analyst's defaults: one team for the CLI and Python, analyst KPIs first, and answers that explain themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import csr_marl
from extras import need

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


@pytest.mark.slow
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
    need("ortools")
    from csr_marl.whatif.schedule import schedule_rows, shift_templates, solve_schedule

    templates = shift_templates(starts=[0, 30], lengths=[60], breaks={}, width=30, horizon=90)
    schedule = solve_schedule({"resolver": [1, 2, 1]}, templates, width=30)
    rows = schedule_rows(schedule, "08:00")
    assert [(r["start_time"], r["end_time"]) for r in rows] == [("08:00", "09:00"), ("08:30", "09:30")]


@pytest.mark.parametrize("args, message", [
    (["schedule", "standard_day"], "error: Missing option '--out' / '-o'. (see csr-marl schedule --help)"),
    (["simulate", "standard_day", "--bogus"], "error: No such option: --bogus"),
    (["simulate", "standard_day", "--seed", "x"], "error: Invalid value for '--seed'"),
    (["bogus"], "error: No such command 'bogus'."),
])
def test_usage_errors_are_one_line_with_exit_code_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output


@pytest.mark.parametrize("args, hint", [
    (["simulate", "standard_dya"], "did you mean standard_day?"),
    (["simulate", "standard_day", "--set", "staffing.resolvr=3"], "did you mean staffing.resolver?"),
    (["simulate", "standard_day", "--set", "horizn_minutes=3"], "did you mean horizon_minutes?"),
    (["staff", "standard_day", "--target", "servce_level>=0.8"], "did you mean service_level?"),
])
def test_unknown_names_get_the_nearest_one(args: list[str], hint: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and hint in result.output


@pytest.mark.parametrize("distribution, hint", [
    ("{dist: lognormal, mean_minutes: 8, cvv: 0.5}", "handle_times.tools.respond_user.cvv: unknown key (did you mean handle_times.tools.respond_user.cv?)"),
    ("{dist: gamma, mean_minuts: 8, cv: 0.5}", "unknown key (did you mean handle_times.tools.respond_user.mean_minutes?)"),
    ("{dist: empirical, valuse: [4, 8]}", "unknown key (did you mean handle_times.tools.respond_user.values?)"),
    ("{dist: lognormall, mean_minutes: 8, cv: 0.5}", "unknown dist 'lognormall' (did you mean lognormal?)"),
])
def test_a_misspelt_key_inside_a_distribution_gets_the_nearest_one(tmp_path: Path, distribution: str, hint: str) -> None:
    scenario = tmp_path / "typo_day.yaml"
    scenario.write_text("name: typo_day\nhorizon_minutes: 60\narrivals: {rate_per_hour: 60}\ntickets: {bank: tickets/validation.yaml}\n"
                        f"handle_times:\n  tools:\n    respond_user: {distribution}\n")
    log = tmp_path / "contacts.csv"
    result = runner.invoke(app, ["simulate", str(scenario), "--log", str(log)])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and hint in lines[0], result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["typo_day.yaml"]  # nothing written


@pytest.mark.slow
def test_every_table_command_has_json(tmp_path: Path) -> None:
    listed = json.loads(runner.invoke(app, ["scenarios", "--json"]).stdout)
    assert {"name": "standard_day", "opens_at": "08:00"}.items() <= next(s for s in listed if s["name"] == "standard_day").items()
    swept = runner.invoke(app, ["sweep", "validation/mmc", "--vary", "staffing.resolver=4,5", "-r", "2", "--workers", "1",
                                "--set", "horizon_minutes=60", "--set", "warmup_minutes=0", "--target", "service_level>=0.5", "--out", str(tmp_path / "s"), "--json"])
    assert swept.exit_code == 0, swept.output
    points = json.loads(swept.stdout)["points"]
    assert [p["values"]["staffing.resolver"] for p in points] == [4, 5] and "service_level>=0.5" in points[0]["verdicts"]
    need("ortools")  # the rest is the schedule command's
    scheduled = runner.invoke(app, ["schedule", "validation/mmc", "--target", "service_level>=0.5", "--set", "horizon_minutes=60",
                                    "--set", "warmup_minutes=0", "--starts", "0,30", "--lengths", "30,60", "-r", "2",
                                    "--max-replications", "2", "--use", "sipp", "--workers", "1", "--out", str(tmp_path / "c"), "--json"])
    assert scheduled.exit_code == 0, scheduled.output
    payload = json.loads(scheduled.stdout)
    assert payload["shifts"] and len(payload["intervals"]) == 2 and payload["roles"]["resolver"]["on_floor"] >= 1
