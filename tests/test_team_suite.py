"""The team reward orders scripted teams as their manager would (benchmarks/team_suite.py, results page
benchmarks/results/team_suite.md): shortcut teams below the honest heuristic, and Kendall's tau between
the team return and the manager's score at least 0.9, on the same days for every team."""

from __future__ import annotations

import pytest

from csr_marl.policies.shortcuts import SHORTCUTS
from csr_marl.whatif.team_suite import SETTINGS, TEAMS, kendall_tau, run_suite

# The CI run plays 6-hour days and leaves out the two text_classifier teams (their classifier takes a
# minute to fit).
FAST_TEAMS = ("heuristic", "expert", "fifo", "newest_first", "random", *SHORTCUTS)


def test_kendall_tau_counts_agreeing_and_disagreeing_pairs() -> None:
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [40, 30, 20, 10]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_the_team_reward_orders_teams_as_the_manager_on_short_written_staffing_days() -> None:
    run = run_suite("standard_day", range(20), FAST_TEAMS, {"horizon_minutes": 360})
    assert len(run.returns) >= 10
    assert run.failures() == []


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_team_reward_orders_teams_as_the_manager_in_every_setting(setting: str) -> None:
    run = run_suite(setting, range(20), TEAMS)
    assert run.failures() == []
