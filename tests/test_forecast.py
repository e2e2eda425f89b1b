"""A forecast in: per-interval volume and AHT -> Erlang and simulated requirements, on the floor and rostered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import csr_marl
from extras import need

from csr_marl.cli import app
from csr_marl.whatif import StudyError
from csr_marl.whatif.erlang_table import erlang_table
from csr_marl.whatif.forecast import erlang_requirements, forecast_scenario, read_forecast, rostered

runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_forecast_rows_are_sized_like_the_erlang_command(tmp_path: Path) -> None:
    forecast = read_forecast(write(tmp_path / "f.csv", "interval,volume,aht_seconds\n08:00,100,180\n08:30,0,180\n09:00,150,240\n"))
    rows = erlang_requirements(forecast["resolver"], 0.8, 20, shrinkage=0.3, max_occupancy=0.85)
    one = erlang_table(100, 30, 180, 0.8, 20, shrinkage=0.3, max_occupancy=0.85)
    assert (rows[0].on_floor, rows[0].rostered) == (one.required_agents, one.scheduled_agents) == (14, 20)
    assert (rows[1].on_floor, rows[1].rostered) == (0, 0)
    assert forecast["resolver"].opens_at == "08:00" and forecast["resolver"].width == 30
    scenario = forecast_scenario(forecast["resolver"], 20)
    assert scenario.opens_at == "08:00" and scenario.horizon_minutes == 90
    assert scenario.arrivals.profile == ((0, 200.0), (30, 0.0), (60, 300.0))
    assert scenario.handle_times.tools["respond_user"].mean == pytest.approx((100 * 180 + 150 * 240) / 250 / 60, abs=1e-4)
    assert rostered(14, 0.3) == 20


@pytest.mark.parametrize("text, message", [
    ("interval,volume\n08:00,1\n", "no column aht_seconds"),
    ("interval,volume,aht_seconds\n08:00,1,180\n08:45,1,180\n", "consecutive and 15, 30, 60 minutes wide"),
    ("interval,volume,aht_seconds\n8h,1,180\n", "line 2: interval '8h'"),
    ("interval,volume,aht_seconds\n08:00,-1,180\n", "line 2: volume must be >= 0"),
])
def test_a_bad_forecast_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(StudyError, match=message):
        read_forecast(write(tmp_path / "f.csv", text))


def test_staff_forecast_gives_erlang_beside_the_simulation_and_feeds_schedule(tmp_path: Path) -> None:
    need("ortools")
    forecast = write(tmp_path / "f.csv", "interval,volume,aht_minutes,queue\n09:00,30,4,sales\n09:30,60,4,sales\n")
    out, scenario = tmp_path / "req.csv", tmp_path / "day.yaml"
    args = ["staff", "--forecast", str(forecast), "--target", "service_level>=0.8", "--shrinkage", "0.25", "-r", "3",
            "--max-replications", "3", "--workers", "1", "--out", str(out),
            "--scenario-out", str(scenario), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["queues"]["sales"]["intervals"]
    assert [r["start_time"] for r in rows] == ["09:00", "09:30"]
    for row in rows:
        assert row["sipp"] > row["load_erlangs"] and row["iterative"] >= 1
        assert row["iterative_rostered"] == rostered(row["iterative"], 0.25)
    assert csr_marl.load_scenario(scenario).opens_at == "09:00"
    shifts = runner.invoke(app, ["schedule", str(scenario), "--requirements", str(out), "--target", "service_level>=0.8",
                                 "--starts", "0,30", "--lengths", "30,60", "-r", "2", "--max-replications", "2",
                                 "--workers", "1", "--shrinkage", "0.25", "--out", str(tmp_path / "s")])
    assert shifts.exit_code == 0, shifts.output
    assert "rostered" in shifts.output
    both = runner.invoke(app, ["staff", "standard_day", "--forecast", str(forecast)])
    assert both.exit_code == 2 and "not both" in both.output
