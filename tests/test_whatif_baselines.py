"""Baselines: per-scenario mean and CI, the same customers under every policy, written reports."""

from __future__ import annotations

import json

import pytest

import csr_marl
from csr_marl.whatif import InlineExecutor, StudyError, run_baselines, write_baseline_report
from csr_marl.whatif.baselines import HEADLINE, resolve_scenarios

SHORT = {"horizon_minutes": 60, "warmup_minutes": 0}


@pytest.fixture(scope="module")
def rows_by_policy():
    return {
        policy: run_baselines(["mmc", "standard_day"], policy, episodes=3, overrides=SHORT, executor=InlineExecutor())
        for policy in ("random", "heuristic")
    }


def test_one_row_per_scenario_with_cis(rows_by_policy) -> None:
    rows = rows_by_policy["random"]
    assert [row.scenario for row in rows] == ["mmc", "standard_day"]
    for row in rows:
        assert row.episodes == 3 and row.policy == "random"
        team = row.estimates["team_return"]
        assert team.n == 3 and team.low <= team.mean <= team.high


def test_heuristic_beats_random(rows_by_policy) -> None:
    random_row, heuristic_row = (rows_by_policy[p][1] for p in ("random", "heuristic"))
    assert heuristic_row.estimates["team_return"].mean > random_row.estimates["team_return"].mean


def test_policies_see_the_same_customers() -> None:
    no_returns = {**SHORT, "customers.reopen.probability": 0}  # then offered = arrivals
    offered = {
        policy: run_baselines("standard_day", policy, episodes=2, overrides=no_returns, executor=InlineExecutor())[0]
        .estimates["offered"].mean
        for policy in ("random", "fifo")
    }
    assert offered["random"] == offered["fifo"]


def test_report_files(rows_by_policy, tmp_path) -> None:
    paths = write_baseline_report(rows_by_policy["heuristic"], tmp_path, seed=0, command="csr-marl baseline ...")
    assert sorted(p.name for p in paths) == ["heuristic_baseline.csv", "heuristic_baseline.json", "heuristic_baseline.md"]
    markdown = (tmp_path / "heuristic_baseline.md").read_text()
    assert "| scenario | " + " | ".join(HEADLINE) + " |" in markdown
    assert "| standard_day | " in markdown and "versions: python" in markdown
    payload = json.loads((tmp_path / "heuristic_baseline.json").read_text())
    assert payload["policy"] == "heuristic" and payload["episodes"] == 3
    assert set(payload["scenarios"]) == {"mmc", "standard_day"}
    assert {"mean", "low", "high", "n"} == set(payload["scenarios"]["mmc"]["team_return"])
    assert payload["machine"]["cpu_count"] >= 1


def test_all_means_every_shipped_scenario() -> None:
    assert resolve_scenarios("all") == csr_marl.scenario_names()
    assert resolve_scenarios("mmc, surge") == ["mmc", "surge"]


def test_bad_baseline_input() -> None:
    with pytest.raises(StudyError, match="unknown policy 'psychic'"):
        run_baselines("mmc", "psychic")
    with pytest.raises(StudyError, match="--episodes must be at least 1"):
        run_baselines("mmc", "random", episodes=0)
    with pytest.raises(csr_marl.ScenarioError, match="unknown scenario 'atlantis'"):
        run_baselines("mmc,atlantis", "random")


def test_split_both_puts_train_and_held_out_side_by_side(tmp_path) -> None:
    """A scenario whose bank holds tickets out gets a train and a held-out row, adjacent, on the same
    seeds (the same arrivals); a validation bank holds nothing out: one 'all' row."""
    rows = run_baselines(["tasks/classify", "mmc"], "heuristic", episodes=2, executor=InlineExecutor(), split="both")
    assert [(row.scenario, row.split) for row in rows] == [
        ("tasks/classify", "train"), ("tasks/classify", "test"), ("mmc", "all")]
    assert [row.label for row in rows] == ["tasks/classify (train)", "tasks/classify (held-out)", "mmc"]
    train, held_out, _ = rows
    assert train.estimates["offered"].mean == held_out.estimates["offered"].mean  # the same arrivals
    assert held_out.estimates["triage_accuracy"].mean < train.estimates["triage_accuracy"].mean - 0.2
    write_baseline_report(rows, tmp_path, seed=0, command="csr-marl baseline --split both")
    markdown = (tmp_path / "heuristic_baseline.md").read_text()
    assert "| scenario | split | team_return |" in markdown
    assert "| tasks/classify | train | " in markdown and "| tasks/classify | held-out | " in markdown
    assert "| mmc | all | " in markdown
    payload = json.loads((tmp_path / "heuristic_baseline.json").read_text())
    assert list(payload["scenarios"]) == ["tasks/classify (train)", "tasks/classify (held-out)", "mmc"]
    assert payload["splits"]["tasks/classify (held-out)"] == {"scenario": "tasks/classify", "split": "test"}
    assert (tmp_path / "heuristic_baseline.csv").read_text().splitlines()[0].startswith("scenario,split,policy,")


def test_one_side_of_the_split_and_bad_split_values() -> None:
    rows = run_baselines("tasks/classify", "heuristic", episodes=2, executor=InlineExecutor(), split="test")
    assert [(row.scenario, row.split, row.label) for row in rows] == [("tasks/classify", "test", "tasks/classify (held-out)")]
    with pytest.raises(StudyError, match="--split must be one of all, train, test, both"):
        run_baselines("mmc", "random", split="held_out")
    with pytest.raises(csr_marl.ScenarioError, match="holds no test tickets"):
        run_baselines("mmc", "random", split="test")
