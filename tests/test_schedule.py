"""Shift schedules with CP-SAT: coverage, cost, breaks, budgets, and the schedule command's files."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from extras import need

import csr_marl
from csr_marl.cli import app
from csr_marl.whatif import StudyError
from csr_marl.whatif.schedule import ShiftTemplate, read_requirements, shift_templates, solve_schedule

need("ortools")
runner = CliRunner()


def test_cover_meets_every_interval_at_least_cost() -> None:
    templates = shift_templates([0, 30, 60, 90], [60, 120], None, 30, 120)
    need = [1, 2, 2, 1]
    schedule = solve_schedule({"resolver": need}, templates, 30)
    assert all(c >= n for c, n in zip(schedule.coverage["resolver"], need))
    assert schedule.paid_hours() == pytest.approx(3.0)  # 6 staff-intervals of 30 min: no slack possible
    assert schedule.status == "OPTIMAL"


def test_breaks_leave_a_hole_near_the_middle_of_the_shift() -> None:
    template = ShiftTemplate(0, 240, 30)
    assert template.break_starts(30) == [60, 90, 120, 150]  # within an hour of the middle, never first or last
    templates = shift_templates([0], [240], {240: 30}, 30, 240)
    schedule = solve_schedule({"resolver": [1] * 8}, templates, 30, mode="budget", budget=1)
    assert sorted(schedule.coverage["resolver"]) == [0] + [1] * 7
    assert schedule.shortfall("resolver") == 1 and schedule.headcount("resolver") == 1


def test_budget_gives_the_least_shortfall() -> None:
    templates = shift_templates([0, 60], [60], None, 30, 120)
    schedule = solve_schedule({"resolver": [3, 3, 1, 1]}, templates, 30, mode="budget", budget=3)
    assert schedule.shortfall("resolver") == 2 and schedule.headcount("resolver") == 3
    assert max(n - c for n, c in zip([3, 3, 1, 1], schedule.coverage["resolver"])) == 1  # spread, not piled up


@pytest.mark.parametrize(
    ("starts", "lengths", "breaks", "message"),
    [([0, 45], [60], None, "multiples of the 30-minute"), ([0], [60], {480: 30}, "no shift is 480"),
     ([0], [60], {60: 60}, "shorter than the shift"), ([600], [60], None, "fits in the")],
)
def test_bad_templates_are_refused(starts, lengths, breaks, message) -> None:
    with pytest.raises(StudyError, match=message):
        shift_templates(starts, lengths, breaks, 30, 480)


def test_an_interval_no_template_reaches_is_named() -> None:
    with pytest.raises(StudyError, match="minute 60"):
        solve_schedule({"resolver": [1, 1, 1, 1]}, shift_templates([0], [60], None, 30, 120), 30)


def test_requirements_file_is_checked(tmp_path: Path) -> None:
    good = tmp_path / "req.csv"
    good.write_text("start_minute,role,iterative\n0,resolver,2\n30,resolver,3\n")
    assert read_requirements(good, "iterative", [0, 30]) == {"resolver": [2, 3]}
    with pytest.raises(StudyError, match="minute 60"):
        read_requirements(good, "iterative", [0, 30, 60])
    with pytest.raises(StudyError, match="no column sipp"):
        read_requirements(good, "sipp", [0, 30])


def test_schedule_command_writes_a_scenario_that_simulates(tmp_path: Path) -> None:
    req = tmp_path / "req.csv"
    req.write_text("start_minute,role,iterative\n" + "".join(f"{m},resolver,{n}\n" for m, n in [(0, 3), (30, 4), (60, 6), (90, 5)]))
    out = tmp_path / "plan"
    args = ["schedule", "validation/mmc", "--target", "service_level>=0.8", "--requirements", str(req),
            "--starts", "0..60:30", "--lengths", "60,120", "--replications", "3", "--workers", "1", "--out", str(out),
            "--lengths", "60", "--set", "horizon_minutes=120", "--set", "warmup_minutes=0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {"schedule.csv", "scenario.yaml", "intervals.csv"}
    scheduled = csr_marl.load_scenario(out / "scenario.yaml")
    heads = [scheduled.staffing.headcount_at("resolver", m) for m in (0, 30, 60, 90)]
    assert all(h >= n for h, n in zip(heads, [3, 4, 6, 5]))
    assert "SL resolver" in result.output


def test_schedule_command_refuses_bad_input_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    result = runner.invoke(app, ["schedule", "validation/mmc", "--target", "service_level>=0.8", "--starts", "0,7",
                                 "--out", str(out)])
    assert result.exit_code == 2 and "multiples" in result.output
    assert not out.exists()
    result = runner.invoke(app, ["schedule", "validation/mmc", "--target", "abandonment_rate<=0.1", "--out", str(out)])
    assert result.exit_code == 2 and "service_level>=" in result.output and not out.exists()


def _one_line_refusal(args: list[str], *named: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in result.output, result.output
    for word in named:
        assert word in lines[0], (word, lines[0])


SMALL = ["schedule", "validation/mmc", "--target", "service_level>=0.8", "--replications", "2", "--workers", "1",
         "--lengths", "60", "--set", "horizon_minutes=120", "--set", "warmup_minutes=0"]


def test_budget_zero_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    _one_line_refusal([*SMALL, "--budget", "0", "--out", str(out)], "--budget")
    assert not out.exists()


@pytest.mark.parametrize("starts", ["[" * 200 + "]" * 200, "[" * 200, "[[0, 30]]", "[.inf]", "0,.nan", "[0, abc]"])
def test_list_options_are_read_within_bounds(tmp_path: Path, starts: str) -> None:
    out = tmp_path / "plan"
    _one_line_refusal([*SMALL, "--starts", starts, "--out", str(out)], "--starts")
    assert not out.exists()


@pytest.mark.parametrize("value", ["inf", "nan", "1e12", "-1"])
def test_a_requirement_out_of_range_names_its_line(tmp_path: Path, value: str) -> None:
    req = tmp_path / "req.csv"
    req.write_text(f"start_minute,role,iterative\n0,resolver,2\n30,resolver,{value}\n")
    with pytest.raises(StudyError, match="req.csv line 3"):
        read_requirements(req, "iterative", [0, 30])


def test_a_schedule_nobody_works_still_draws_its_chart() -> None:
    """No staff-minutes worked: the chart has no pace to draw capacity from, and leaves it out."""
    from csr_marl.cli.schedule import _chart
    from csr_marl.whatif.executors import executor_scope
    from csr_marl.whatif.interval_runs import scenario_with_plan
    from csr_marl.whatif.interval_staffing import check_until_decided

    base = csr_marl.load_scenario("validation/mmc", {"horizon_minutes": 60, "warmup_minutes": 0, "staffing.triage": 1})
    schedule = solve_schedule({"resolver": [1, 1]}, shift_templates([0], [60], None, 30, 60), 30, mode="budget", budget=0)
    plan = {"resolver": schedule.coverage["resolver"]}
    with executor_scope(None, 1) as pool:
        check = check_until_decided(scenario_with_plan(base, plan), plan, "expert", 0, ["resolver"], 0.8, 2, 2, pool)
    assert _chart(base, schedule, check, 0.8)[:4] == b"\x89PNG"
