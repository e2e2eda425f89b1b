"""KPIs per interval of the day: they add up to the whole-day KPIs and follow the arrival profile."""

from __future__ import annotations

import json
import math

import pytest

import csr_marl
from csr_marl.config.loading import ScenarioError, load_scenario
from csr_marl.sim.intervals import IntervalKpis, interval_rows_json


@pytest.mark.parametrize("width", [15, 30, 60])
def test_interval_counts_add_up_to_the_day(width: int) -> None:
    result = csr_marl.simulate("standard_day", "expert", seed=3, overrides={"service_level.interval_minutes": width})
    rows = result.intervals
    assert len(rows) == math.ceil(480 / width)
    assert rows[0]["start_minute"] == 0 and rows[-1]["end_minute"] == 480
    kpis = result.kpis
    assert sum(r["offered"] for r in rows) == kpis["offered"]
    assert sum(r["abandoned"] for r in rows) == kpis["abandoned"]
    assert sum(r["answered_queue"] for r in rows) == kpis["answered"]
    answered_in = sum(r["service_level"] * r["offered_queue"] for r in rows if r["offered_queue"])
    entered = sum(r["offered_queue"] for r in rows)
    assert answered_in / entered == pytest.approx(kpis["service_level"])
    busy = sum(r["occupancy_resolver"] * r["headcount_resolver"] * (r["end_minute"] - r["start_minute"]) for r in rows)
    assert busy / (10 * 480) == pytest.approx(kpis["occupancy_resolver"], rel=1e-6)


def test_intervals_show_the_peak_that_the_day_hides() -> None:
    rows = csr_marl.simulate("standard_day", "expert", seed=0).intervals
    first, peak = rows[0], max(rows, key=lambda r: r["offered"])
    assert first["offered"] < peak["offered"]
    assert first["service_level"] > peak["service_level"]
    assert all(r["headcount_resolver"] == 10 for r in rows)


def test_shift_headcount_per_interval() -> None:
    shifts = [{"at_minute": 45, "resolver": 6}, {"at_minute": 120, "resolver": 2}]
    result = csr_marl.simulate("validation/mmc", "expert", seed=1, overrides={
        "staffing.shifts": shifts, "horizon_minutes": 180, "warmup_minutes": 0})
    heads = [r["headcount_resolver"] for r in result.intervals]
    assert heads == pytest.approx([4, (15 * 4 + 15 * 6) / 30, 6, 6, 2, 2])
    assert all(0 <= r["occupancy_resolver"] <= 1 for r in result.intervals)


def test_busy_span_splits_at_interval_edges() -> None:
    kpis = IntervalKpis(30, 120, 1.0)
    kpis.busy_span("resolver", 20.0, 75.0)
    assert kpis.busy["resolver"] == pytest.approx([10.0, 30.0, 15.0, 0.0])
    kpis.busy_span("resolver", 500.0, 510.0)  # past the horizon: pooled into the last interval
    assert kpis.busy["resolver"][-1] == pytest.approx(10.0)


def test_rows_are_strict_json() -> None:
    rows = csr_marl.simulate("validation/two_tier", "expert", seed=0).intervals
    text = json.dumps(interval_rows_json(rows), allow_nan=False)
    assert json.loads(text)[0]["start_minute"] == 0


def test_interval_width_is_checked() -> None:
    with pytest.raises(ScenarioError, match="interval_minutes"):
        load_scenario("standard_day", {"service_level.interval_minutes": 7})


def test_simulate_prints_the_interval_table_and_json_rows() -> None:
    from typer.testing import CliRunner

    from csr_marl.cli import app

    runner = CliRunner()
    shown = runner.invoke(app, ["simulate", "validation/mmc", "--interval", "60", "--set", "horizon_minutes=180"])
    assert shown.exit_code == 0, shown.output
    assert "per 60-minute interval" in shown.output and "02:00" in shown.output
    raw = runner.invoke(app, ["simulate", "validation/mmc", "--interval", "15", "--json", "--set", "horizon_minutes=120"])
    payload = json.loads(raw.stdout)
    assert payload["interval_minutes"] == 15 and len(payload["intervals"]) == 8
    json.dumps(payload["intervals"], allow_nan=False)
    bad = runner.invoke(app, ["simulate", "validation/mmc", "--interval", "7"])
    assert bad.exit_code == 2 and "interval_minutes" in bad.output
