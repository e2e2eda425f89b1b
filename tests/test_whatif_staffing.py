"""Staffing search: Erlang start, simulation confirms, least headcount, clear refusals."""

from __future__ import annotations

import pytest

import csr_marl
from csr_marl.whatif import InlineExecutor, StudyError, least_feasible, parse_targets, search_staffing
from csr_marl.whatif.staffing_estimate import arrival_rates

SHORT = {"horizon_minutes": 180, "warmup_minutes": 0}


@pytest.mark.parametrize("start", [0, 3, 7, 12, 40])
@pytest.mark.parametrize("answer", [0, 1, 7, 13])
def test_least_feasible_finds_the_threshold_from_any_start(start: int, answer: int) -> None:
    found, tried = least_feasible(lambda n: n >= answer, start, 0, 40)
    assert found == answer
    assert len(tried) <= 12


def test_least_feasible_reports_none_when_the_cap_fails() -> None:
    found, tried = least_feasible(lambda n: n >= 50, 5, 0, 20)
    assert found is None and tried[-1] == 20


def test_arrival_rates_over_the_profile_and_surges() -> None:
    mean, peak = arrival_rates(csr_marl.load_scenario("standard_day"))
    assert mean == pytest.approx(38_700 / 480 / 60)
    assert peak == pytest.approx(105 / 60)
    _, surge_peak = arrival_rates(csr_marl.load_scenario("surge"))
    assert surge_peak == pytest.approx(105 * 2.5 / 60)
    assert arrival_rates(csr_marl.load_scenario("mmc")) == pytest.approx((2.0, 2.0))


@pytest.fixture(scope="module")
def mmc_answer():
    messages: list[str] = []
    answer = search_staffing(
        "mmc", parse_targets(["p_wait<=0.5"]), overrides=SHORT, executor=InlineExecutor(),
        min_replications=6, max_replications=18, report=messages.append,
    )
    return answer, messages


def test_mmc_least_resolvers_for_p_wait(mmc_answer) -> None:
    # Erlang C with a = 3.2: P(wait) is 0.60 with 4 agents and 0.29 with 5.
    answer, messages = mmc_answer
    assert answer.staffing == {"triage": 0, "resolver": 5, "escalation": 0}
    (role,) = answer.roles
    assert role.role == "resolver" and role.headcount == 5
    assert role.erlang.headcount == 5 and 2.8 < role.erlang.peak_load < 3.6
    assert role.at.feasible and role.at.verdicts == {"p_wait<=0.5": "met"}
    assert role.below is not None and role.below.staffing["resolver"] == 4
    assert role.below.verdicts == {"p_wait<=0.5": "missed"}
    assert role.at.estimates["p_wait"].high <= 0.5 < role.below.estimates["p_wait"].low
    assert any("Erlang estimate 5" in m for m in messages)


def test_impossible_target_says_so_in_one_line() -> None:
    with pytest.raises(StudyError) as info:
        search_staffing(
            "mmc", parse_targets(["p_wait<=0.01"]), overrides=SHORT, executor=InlineExecutor(),
            min_replications=3, max_replications=3, max_headcount=4,
        )
    message = str(info.value)
    assert message.startswith("no resolver headcount up to 4 meets p_wait<=0.01 (at 4: ")
    assert "raise --max-headcount or relax the target" in message and "\n" not in message


@pytest.mark.parametrize(
    ("scenario", "targets", "roles", "message"),
    [
        ("mmc", [], None, "give at least one --target"),
        ("mmc", ["occupancy_resolver>=0.8"], None, "more staff makes this harder"),
        ("mmc", ["p_wait<=0.5"], ["cashier"], "--role 'cashier': unknown role"),
        ("night_shift", ["p_wait<=0.5"], ["resolver"], "changes resolver headcount by shift"),
    ],
)
def test_bad_staffing_input(scenario: str, targets: list[str], roles, message: str) -> None:
    with pytest.raises(StudyError, match=message):
        search_staffing(scenario, parse_targets(targets), roles, executor=InlineExecutor())
