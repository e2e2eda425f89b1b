"""Building a scenario costs n log n in its schedule lists (surges, shift changes), and the schema's
maxima are what runs: a day with the most shift changes simulates in seconds."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import csr_marl
from csr_marl.config.loading import ScenarioError
from csr_marl.config.scenario import MAX_SCHEDULE_ENTRIES, Arrivals

ROOT = Path(__file__).resolve().parents[1]


def one_by_one(arrivals: Arrivals, horizon: float) -> list[tuple[float, float, float]]:
    """The rate of each piece, every surge checked against every piece (the definition)."""
    pieces = []
    for start, end, _ in arrivals.segments(horizon):
        steps = arrivals.profile or ((0.0, arrivals.rate_per_hour),)
        rate = float([r for s, r in steps if s <= start][-1])
        for surge in arrivals.surges:
            if surge.start_minute <= start < surge.end_minute:
                rate *= surge.multiplier
        pieces.append((start, end, rate))
    return pieces


@pytest.mark.parametrize("seed", range(40))
def test_surge_pieces_are_the_one_by_one_rates(seed: int) -> None:
    rng = random.Random(seed)
    surges = []
    for _ in range(rng.randint(0, 20)):
        start = rng.choice([rng.uniform(0, 500), 60.0 * rng.randint(0, 8)])
        surges.append({"start_minute": start, "end_minute": start + rng.choice([rng.uniform(0.5, 240), 60.0]),
                       "multiplier": rng.uniform(0.2, 4)})
    source = {"profile": [[0, 40], [120, 90], [300, 0], [360, 20]]} if seed % 2 else {"rate_per_hour": 60}
    arrivals = Arrivals(**source, surges=surges)
    assert arrivals.segments(480) == one_by_one(arrivals, 480)


@pytest.mark.parametrize("field", ["arrivals.surges", "staffing.shifts", "arrivals.profile"])
def test_the_schema_refuses_more_entries_than_it_runs(field: str) -> None:
    entries = {
        "arrivals.surges": [{"start_minute": i, "end_minute": i + 0.5, "multiplier": 2} for i in range(MAX_SCHEDULE_ENTRIES + 1)],
        "staffing.shifts": [{"at_minute": i, "resolver": 2} for i in range(MAX_SCHEDULE_ENTRIES + 1)],
        "arrivals.profile": [[i, 60] for i in range(MAX_SCHEDULE_ENTRIES + 1)],
    }[field]
    overrides = {field: entries} if field != "arrivals.profile" else {"arrivals": {"profile": entries}}
    with pytest.raises(ScenarioError, match=field.split(".")[1]):
        csr_marl.load_scenario("standard_day", overrides)


@pytest.mark.slow
def test_simulate_with_the_most_shift_changes_finishes(tmp_path: Path) -> None:
    """10,000 shift changes over the day: seconds now (before, the shift lookups made it quadratic,
    and this did not finish in 90 s). The subprocess's bound is a guard, not a timing."""
    shifts = [{"at_minute": round(i * 480 / MAX_SCHEDULE_ENTRIES, 4), "resolver": 1 + i % 5} for i in range(MAX_SCHEDULE_ENTRIES)]
    scenario = tmp_path / "many_shifts.yaml"
    scenario.write_text(yaml.safe_dump({"name": "many_shifts", "arrivals": {"rate_per_hour": 90}, "staffing": {"shifts": shifts}}))
    done = subprocess.run([sys.executable, "-m", "csr_marl", "simulate", str(scenario), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"offered"' in done.stdout


def test_the_headcount_at_a_minute_is_the_last_change_before_it() -> None:
    scenario = csr_marl.load_scenario("standard_day", {"staffing.resolver": 4, "staffing.shifts": [
        {"at_minute": 60, "resolver": 2}, {"at_minute": 120, "triage": 3}, {"at_minute": 180, "resolver": 6}]})
    staffing = scenario.staffing
    assert [staffing.headcount_at("resolver", m) for m in (0, 59.9, 60, 150, 180, 400)] == [4, 4, 2, 2, 6, 6]
    assert [staffing.headcount_at("triage", m) for m in (0, 119, 120, 400)] == [staffing.triage, staffing.triage, 3, 3]
    assert staffing.changes_between(60, 180) == (120.0,)
