"""The interval planner: lagged offered load, simulation rounds with control variates, textbook SIPP,
per-interval handle times, and the forecast and schedule commands around it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import csr_marl
from csr_marl.analysis.intervals import sipp_headcounts
from csr_marl.cli import app
from csr_marl.config.loading import load_scenario
from csr_marl.whatif.executors import InlineExecutor
from csr_marl.whatif.forecast import erlang_requirements, read_forecast
from csr_marl.whatif.interval_planner import LaggedErlang, _formula, _move, controlled_levels, plan_intervals
from csr_marl.whatif.interval_runs import (
    IntervalRun,
    interval_arrival_rates,
    mean_service_minutes,
    run_interval_replications,
    scenario_with_plan,
)
from csr_marl.whatif.summary import Estimate, estimates

runner = CliRunner()
FORECAST = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "forecast.csv"


def test_lagged_load_at_a_constant_rate_gives_sipp_once_the_floor_fills() -> None:
    rates = np.full(300, 3.0)  # 180 an hour for five hours, 10-minute calls: 30 Erlangs once settled
    model = LaggedErlang(rates, np.full(300, 10.0), math.inf, 0.0, 30)
    assert model.load[-1] == pytest.approx(30.0, rel=1e-3)
    assert model.load[9] == pytest.approx(30.0 * (1 - math.exp(-1)), rel=1e-3)  # a day that opens empty
    sipp = sipp_headcounts([3.0], 10.0, 0.0, 0.5)[0]
    assert model.least(9, 0.5) == sipp  # the last half-hour: the stationary answer
    assert model.least(0, 0.5) < sipp  # the first: an empty floor needs fewer


def _runs(values: np.ndarray, offered: np.ndarray) -> list[IntervalRun]:
    rows = lambda v, o: [{"service_level_resolver": v, "offered": o}]  # noqa: E731
    return [IntervalRun({}, rows(float(v), float(o)), {}) for v, o in zip(values, offered)]


def test_control_variates_narrow_the_interval_and_keep_the_mean() -> None:
    rng = np.random.default_rng(7)
    offered = rng.poisson(90, 400).astype(float)
    values = 0.55 - 0.02 * (offered - 90) + rng.normal(0, 0.05, 400)
    plain = estimates([{"v": v} for v in values], ["v"])["v"]
    controlled = controlled_levels(_runs(values, offered), "service_level_resolver", [90.0])[0]
    assert controlled.low <= 0.55 <= controlled.high
    assert controlled.high - controlled.low < 0.4 * (plain.high - plain.low)
    blind = controlled_levels(_runs(values, offered), "service_level_resolver", None)[0]
    assert blind.mean == pytest.approx(plain.mean) and blind.high - blind.low == pytest.approx(plain.high - plain.low)


@pytest.mark.slow
def test_plan_meets_the_target_for_fewer_staff_hours_than_textbook_sipp() -> None:
    overrides = {"horizon_minutes": 120}
    plan = plan_intervals("examples/sinusoidal_day", 0.5, ["resolver"], overrides=overrides, replications=20,
                          max_replications=80, executor=InlineExecutor())
    rates = interval_arrival_rates(load_scenario("examples/sinusoidal_day", overrides))
    # Textbook SIPP: the scenario's own 10-minute handle time, not a pilot's estimate of it.
    assert plan.mean_service["resolver"] == 10.0
    assert plan.sipp["resolver"] == sipp_headcounts(rates, 10.0, 0.0, 0.5)
    assert sum(plan.iterative["resolver"]) <= sum(plan.sipp["resolver"])
    assert plan.misses(plan.iterative_check) == []
    assert plan.iterative_check.replications >= 20


def test_the_confirmation_adds_wherever_the_fresh_ci_reaches_under_the_target() -> None:
    erlang = _formula(10.0, math.inf, 0.0)  # 10-minute calls, "answered without waiting"
    edge = Estimate(0.53, 0.49, 0.57, 100)  # a round at the cap keeps it: 0.53 - 0.04 / 2 >= 0.5
    assert _move(edge, 22, erlang, 0.5, 0.03, at_cap=True, may_lower=False) == 0
    assert _move(edge, 22, erlang, 0.5, 0.03, at_cap=True, may_lower=False, confirming=True) >= 1
    clear = Estimate(0.60, 0.52, 0.68, 100)
    assert _move(clear, 22, erlang, 0.5, 0.03, at_cap=True, may_lower=False, confirming=True) == 0


def test_fresh_days_put_back_the_agents_the_planning_days_flattered_away(monkeypatch: pytest.MonkeyPatch) -> None:
    # The planning rounds' own days rate every interval far above the target (what their noise can do
    # to one interval in sixteen), so the one round takes an agent from each. The confirmation on days
    # no round saw puts back what the target needs, and the plan's check is on those days.
    import csr_marl.whatif.interval_planner as planner

    def flattering(base, plan, roles, *args, **kwargs):
        return {role: [Estimate(0.97, 0.96, 0.98, 80)] * len(plan[role]) for role in roles}, 80

    monkeypatch.setattr(planner, "_levels_until_decided", flattering)
    overrides = {"horizon_minutes": 120, "warmup_minutes": 0, "arrivals": {"profile": [[0, 120], [60, 360]]},
                 "handle_times.tools.respond_user.mean_minutes": 3.0, "service_level.interval_minutes": 30}
    reports: list[str] = []
    plan = plan_intervals("validation/mmc", 0.8, ["resolver"], overrides=overrides, replications=20,
                          max_replications=80, max_rounds=1, executor=InlineExecutor(), report=reports.append)
    assert any(line.startswith("confirmation 1 on fresh days") and "added 0 " not in line for line in reports)
    assert any("fresh days added" in note for note in plan.notes)
    assert plan.misses(plan.iterative_check) == []
    # The check is the last simulation on the fresh days: the plan it reports is the plan returned.
    assert plan.iterative_check.plan == plan.iterative


def test_each_interval_can_have_its_own_handle_time() -> None:
    base = load_scenario("validation/mmc", {"horizon_minutes": 60, "warmup_minutes": 0,
                                            "service_level.interval_minutes": 30})
    scenario = scenario_with_plan(base, {"resolver": [40, 40]})
    mean = base.handle_times.tools["respond_user"].mean
    plain = run_interval_replications(scenario, "expert", 0, 3, InlineExecutor())
    slow = run_interval_replications(scenario, "expert", 0, 3, InlineExecutor(), handle_scale=[3.0, 3.0])
    assert mean_service_minutes(plain, "resolver") == pytest.approx(mean, rel=0.15)
    assert mean_service_minutes(slow, "resolver") == pytest.approx(3 * mean, rel=0.15)


def test_forecast_command_prints_erlang_at_once() -> None:
    result = runner.invoke(app, ["forecast", str(FORECAST), "--target", "service_level>=0.8", "--shrinkage", "0.3",
                                 "--max-occupancy", "0.85", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["queues"]["resolver"]["intervals"]
    expected = erlang_requirements(read_forecast(FORECAST)["resolver"], 0.8, 20, shrinkage=0.3, max_occupancy=0.85)
    assert [(r["sipp"], r["sipp_rostered"]) for r in rows] == [(e.on_floor, e.rostered) for e in expected]
    assert all(r["occupancy"] <= 0.85 for r in rows)
    assert "service_level_iterative" not in rows[0]  # nothing simulated without --simulate
    assert "forecast" in runner.invoke(app, ["--help"]).output


def test_schedule_refuses_to_replace_a_schedule_without_force(tmp_path: Path) -> None:
    req = tmp_path / "req.csv"
    req.write_text("start_minute,role,iterative\n" + "".join(f"{m},resolver,{n}\n" for m, n in [(0, 3), (30, 4), (60, 6), (90, 5)]))
    out = tmp_path / "plan"
    out.mkdir()
    (out / "schedule.csv").write_text("kept\n")
    args = ["schedule", "validation/mmc", "--target", "service_level>=0.8", "--requirements", str(req),
            "--starts", "0,60", "--lengths", "60", "--replications", "2", "--max-replications", "2",
            "--workers", "1", "--set", "horizon_minutes=120", "--set", "warmup_minutes=0", "--out", str(out)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--force" in refused.output
    assert (out / "schedule.csv").read_text() == "kept\n" and sorted(p.name for p in out.iterdir()) == ["schedule.csv"]
    replaced = runner.invoke(app, [*args, "--force"])
    assert replaced.exit_code == 0, replaced.output
    assert (out / "schedule.csv").read_text().startswith("role,")
    # 3 + 4 + 6 + 5 staff-intervals of 30 minutes need 9 hours; hour shifts on the hour pay 4 + 6.
    assert "resolver: 10 paid hours against 9 required (+11.1%)" in replaced.output
    assert "more hours than the requirement" in replaced.output  # above the default 8%


def test_default_templates_start_every_half_hour_across_the_day() -> None:
    from csr_marl.cli.schedule import DEFAULT_LENGTHS, _shapes

    starts, lengths = _shapes(None, DEFAULT_LENGTHS, 480, 30)
    assert starts == [float(m) for m in range(0, 361, 30)] and lengths == [120, 180, 240, 300, 360, 420, 480]
    starts, lengths = _shapes(None, DEFAULT_LENGTHS, 240, 15)
    assert starts == [0.0, 30.0, 60.0, 90.0, 120.0] and lengths == [120, 180, 240]
    assert _shapes(None, DEFAULT_LENGTHS, 90, 30) == ([0.0], [90])


def test_staff_by_interval_prints_the_plan_beside_textbook_sipp(tmp_path: Path) -> None:
    out = tmp_path / "req.csv"
    args = ["staff", "validation/mmc", "--by-interval", "--target", "service_level>=0.8", "-r", "4",
            "--max-replications", "8", "--workers", "1", "--set", "horizon_minutes=60", "--set", "warmup_minutes=0",
            "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "-min handle time): " in result.output and "\nplan: " in result.output
    assert out.read_text().startswith("start_minute,end_minute,role,offered,sipp,iterative")
