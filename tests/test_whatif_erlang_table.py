"""The analytic staffing table against the textbook example and the analysis layer."""

from __future__ import annotations

import math

import pytest

from csr_marl.analysis import erlang_a
from csr_marl.whatif import StudyError, erlang_table


def test_textbook_erlang_c_example() -> None:
    # 100 calls in 30 minutes, 180 s handle time, 80% within 20 s: 10 Erlangs, 14 agents.
    table = erlang_table(100, 30, 180, 0.8, 20)
    assert table.model == "Erlang C" and table.offered_load == pytest.approx(10.0)
    assert table.agents_for_service_level == table.required_agents == table.scheduled_agents == 14
    row = {r.agents: r for r in table.rows}
    assert row[14].service_level == pytest.approx(0.8884, abs=1e-4)
    assert row[14].p_wait == pytest.approx(0.1741, abs=1e-4)
    assert row[14].asa_seconds == pytest.approx(7.84, abs=0.01)
    assert row[14].occupancy == pytest.approx(10 / 14)
    assert row[13].service_level < 0.8 <= row[14].service_level
    assert min(row) == 11 and max(row) == 17  # three rows either side, only stable staffing
    assert all(r.p_abandon is None for r in table.rows)


def test_patience_gives_erlang_a_with_abandonment() -> None:
    table = erlang_table(100, 30, 180, 0.8, 20, patience_seconds=120)
    assert table.model == "Erlang A" and table.required_agents == 12
    for row in table.rows:
        exact = erlang_a(row.agents, 100 / 1800, 180, 120, 20)
        assert row.p_abandon == pytest.approx(exact.p_abandon)
        assert row.service_level == pytest.approx(exact.service_level)
        assert row.asa_seconds == pytest.approx(exact.asa_served)
    assert table.rows[0].agents == 9  # below the load is fine with abandonment


def test_shrinkage_and_occupancy_cap() -> None:
    table = erlang_table(100, 30, 180, 0.5, 60, shrinkage=0.3, max_occupancy=0.8)
    assert table.agents_for_service_level == 11
    assert table.required_agents == 13  # 10 / 13 = 0.77 <= 0.8 < 10 / 12
    assert table.scheduled_agents == math.ceil(13 / 0.7)
    assert [r.within_occupancy for r in table.rows if r.agents in (12, 13)] == [False, True]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"volume": 0}, "--volume must be > 0, got 0"),
        ({"aht_seconds": -5}, "--aht-seconds must be > 0"),
        ({"target_sl": 80}, "--target-sl must lie in (0, 1), got 80"),
        ({"within_seconds": -1}, "--within-seconds must be >= 0"),
        ({"shrinkage": 1.0}, "--shrinkage must lie in [0, 1), got 1"),
        ({"max_occupancy": 1.5}, "--max-occupancy must lie in (0, 1], got 1.5"),
        ({"patience_seconds": 0}, "--patience-seconds must be > 0"),
    ],
)
def test_bad_inputs(changes: dict, message: str) -> None:
    options = {"volume": 100, "interval_minutes": 30, "aht_seconds": 180, "target_sl": 0.8, "within_seconds": 20, **changes}
    with pytest.raises(StudyError) as info:
        erlang_table(**options)
    assert message in str(info.value)
