"""Staffing by interval (SIPP beside the simulated plan) and the staffing search's offered-load pilot."""

from __future__ import annotations


import numpy as np
import pytest

import csr_marl
from csr_marl.analysis import servers_for_service_level
from csr_marl.analysis.intervals import sipp_headcounts
from csr_marl.whatif import StudyError, parse_targets, search_staffing
from csr_marl.whatif.interval_planner import plan_intervals
from csr_marl.whatif.interval_runs import interval_arrival_rates, mean_service_minutes, run_interval_replications, scenario_with_plan
from csr_marl.whatif.executors import InlineExecutor
from csr_marl.whatif.interval_staffing import check_until_decided
from csr_marl.whatif.summary import estimates

# 90 Erlangs: 3,600 contacts an hour, 1.5-minute exponential handle time, 80% answered within 20 s.
NINETY = {
    "arrivals.rate_per_hour": 3600, "handle_times.tools.respond_user.mean_minutes": 1.5,
    "service_level.threshold_minutes": 1 / 3, "horizon_minutes": 150, "warmup_minutes": 30,
}


@pytest.mark.parametrize("resolvers", [4, 13, 95])
def test_offered_load_does_not_depend_on_the_headcount(resolvers: int) -> None:
    kpis = csr_marl.simulate("validation/mmc", "expert", seed=0, overrides={**NINETY, "staffing.resolver": resolvers}).kpis
    assert kpis["offered_load_resolver"] == pytest.approx(90, rel=0.06)
    if resolvers < 90:  # the carried load (what the pilot used to measure) is capped by the headcount
        assert kpis["occupancy_resolver"] * resolvers <= resolvers < 0.2 * 90


def test_offered_load_counts_customers_who_hang_up() -> None:
    patient = {**NINETY, "customers.patience": {"dist": "exponential", "mean_minutes": 0.5}, "staffing.resolver": 60}
    kpis = csr_marl.simulate("validation/mmc", "expert", seed=1, overrides=patient).kpis
    assert kpis["abandonment_rate"] > 0.2
    assert kpis["offered_load_resolver"] == pytest.approx(90, rel=0.06)
    assert kpis["occupancy_resolver"] * 60 < 0.85 * 90  # served load: short by the abandoned share


@pytest.mark.slow
def test_staff_finds_the_ninety_erlang_answer_from_the_presets_headcount() -> None:
    answer = search_staffing("validation/mmc", parse_targets(["service_level>=0.8"]), ["resolver"],
                             overrides=NINETY, workers=1, min_replications=6, max_replications=18)
    role = answer.roles[0]
    assert role.erlang.headcount >= 88  # the pilot saw the offered load, not the preset's 4 x 2 + 5 busy staff
    assert 93 <= answer.staffing["resolver"] <= 97


def test_when_more_staff_does_not_help_the_error_names_the_policy() -> None:
    with pytest.raises(StudyError, match="policy \\(random\\)") as caught:
        search_staffing("standard_day", parse_targets(["resolution_rate>=0.99"]), ["resolver"], policy="random",
                        overrides={"horizon_minutes": 60}, workers=1, min_replications=2, max_replications=2,
                        max_headcount=12)
    assert "raise --max-headcount" not in str(caught.value)
    assert "--policy expert" in str(caught.value)


def test_sipp_matches_erlang_c_at_a_constant_rate() -> None:
    rate, handle, threshold = 2.0, 1.6, 0.5
    expected = servers_for_service_level(rate, handle, threshold, 0.8)
    assert sipp_headcounts([rate, 0.0, rate], handle, threshold, 0.8) == [expected, 0, expected]


def test_plan_is_laid_out_as_shift_changes() -> None:
    base = csr_marl.load_scenario("validation/mmc", {"horizon_minutes": 120, "warmup_minutes": 0})
    scenario = scenario_with_plan(base, {"resolver": [3, 3, 5, 4]})
    assert [(c.at_minute, c.resolver) for c in scenario.staffing.shifts] == [(60, 5), (90, 4)]
    assert interval_arrival_rates(base) == pytest.approx([2.0] * 4)
    with pytest.raises(ValueError, match="the day has 4"):
        scenario_with_plan(base, {"resolver": [3, 3]})
    day = csr_marl.load_scenario("surge")  # its own shift changes for other roles are kept
    planned = scenario_with_plan(day, {"resolver": [5] * len(interval_arrival_rates(day))})
    for role in ("triage", "escalation"):
        for minute in (0, 100, 250, 400):
            assert planned.staffing.headcount_at(role, minute) == day.staffing.headcount_at(role, minute)
    assert planned.staffing.peak("resolver") == 5


def test_interval_plan_shows_sipp_beside_the_simulated_plan() -> None:
    overrides = {"horizon_minutes": 120, "warmup_minutes": 0, "arrivals": {"profile": [[0, 60], [60, 180]]},
                 "handle_times.tools.respond_user.mean_minutes": 3.0, "service_level.interval_minutes": 30}
    plan = plan_intervals("validation/mmc", 0.8, ["resolver"], overrides=overrides, replications=4,
                          max_replications=4, max_rounds=3, workers=1)
    assert len(plan.sipp["resolver"]) == len(plan.iterative["resolver"]) == 4
    assert plan.sipp["resolver"][0] < plan.sipp["resolver"][3]  # the rate triples at minute 60
    assert plan.iterative["resolver"][0] < plan.iterative["resolver"][3]
    levels = plan.iterative_check.service_level("resolver")
    assert all(0 <= e.mean <= 1 and e.n >= 4 for e in levels)
    assert set(plan.sipp_misses) <= set(range(4)) and plan.iterations <= 3


def test_interval_plan_rejects_bad_input() -> None:
    with pytest.raises(StudyError, match="between 0 and 1"):
        plan_intervals("validation/mmc", 1.5)
    with pytest.raises(StudyError, match="no triages|no triage"):
        plan_intervals("validation/mmc", 0.8, ["triage"])


def test_staff_by_interval_command(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from csr_marl.cli import app

    runner = CliRunner()
    out, chart = tmp_path / "req.csv", tmp_path / "chart.png"
    args = ["staff", "validation/mmc", "--by-interval", "--precise", "--target", "service_level>=0.8", "--replications", "3",
            "--max-replications", "6", "--trim-replications", "4", "--max-iterations", "2", "--workers", "1",
            "--set", "horizon_minutes=60", "--set", "warmup_minutes=0", "--out", str(out), "--plot", str(chart), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    # The precise mode's retired options still parse, and say once that they do nothing.
    assert "--max-iterations, --trim-replications: retired and ignored" in result.stderr
    payload = json.loads(result.stdout)
    assert len(payload["sipp"]["resolver"]) == len(payload["iterative"]["resolver"]) == 2
    assert out.read_text().startswith("start_minute,end_minute,role,offered,sipp,iterative")
    assert chart.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["staff", "validation/mmc", "--by-interval", "--target", "p_wait<=0.2"])
    assert bad.exit_code == 2 and 'service_level>=0.8' in bad.output


@pytest.mark.slow
def test_pilot_handle_time_and_offered_load_carry_no_end_of_day_bias() -> None:
    # 10-minute exponential calls, 50 Erlangs, a 4-hour day that ends with ~50 calls in service. Counting
    # those as whole services put the mean ~10 standard errors low (9.54); completed services only do not.
    overrides = {"handle_times.tools.respond_user.mean_minutes": 10, "arrivals.rate_per_hour": 300,
                 "horizon_minutes": 240, "warmup_minutes": 0, "staffing.resolver": 30}
    base = csr_marl.load_scenario("validation/mmc", overrides)
    staffed = scenario_with_plan(base, {"resolver": [65] * 8})
    runs = [run_interval_replications(staffed, "expert", seed, 1, InlineExecutor()) for seed in range(60)]
    pilots = [(mean_service_minutes(run, "resolver"), run[0].record["offered_load_resolver"]) for run in runs]
    for values, truth in ((np.array([p[0] for p in pilots]), 10.0), (np.array([p[1] for p in pilots]), 50.0)):
        standard_error = values.std(ddof=1) / np.sqrt(values.size)
        assert abs(values.mean() - truth) <= standard_error


def test_interval_verdicts_are_sequential_and_undecided_at_the_cap() -> None:
    # One 30-minute interval overstaffed (service level 1 in every run), one short (about 0.67 against 0.8).
    base = csr_marl.load_scenario("validation/mmc", {"horizon_minutes": 60, "warmup_minutes": 0})
    capped = check_until_decided(scenario_with_plan(base, {"resolver": [12, 4]}), {"resolver": [12, 4]}, "expert", 0, ["resolver"], 0.8, 4, 8, InlineExecutor())
    assert capped.replications == 8 and capped.verdicts(0.8) == ["undecided", "undecided"]
    check = check_until_decided(scenario_with_plan(base, {"resolver": [12, 4]}), {"resolver": [12, 4]}, "expert", 0, ["resolver"], 0.8, 4, 64, InlineExecutor())
    assert check.replications == 32 and check.verdicts(0.8) == ["meets", "below"]
    always, short = check.service_level("resolver")
    # At 1 in all 32 runs: the exact interval [(0.025)^(1/32), 1], not [1, 1].
    assert always.mean == 1.0 and always.low == pytest.approx(0.025 ** (1 / 32)) and always.high == 1.0
    assert 0.0 <= short.low < short.mean < short.high < 0.8


def test_a_share_at_zero_or_one_gets_an_exact_interval_and_cis_stay_in_zero_one() -> None:
    ones = estimates([{"service_level": 1.0}] * 20, ["service_level"])["service_level"]
    assert (ones.low, ones.high) == (pytest.approx(0.025 ** (1 / 20)), 1.0)
    zeros = estimates([{"abandonment_rate": 0.0}] * 20, ["abandonment_rate"])["abandonment_rate"]
    assert (zeros.low, zeros.high) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20)))
    wide = estimates([{"service_level": 0.9}, {"service_level": 1.0}], ["service_level"])["service_level"]
    assert 0.0 <= wide.low and wide.high == 1.0  # the t interval (0.95 ± 0.64) clipped to [0, 1]
