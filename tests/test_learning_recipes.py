"""The learning page's recipes and verdicts (``benchmarks/learning.py``): every task reads the text the
observation probe measured, and a target is met only on a paired win on both scores that no worse urgent
or enterprise outcome bought."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import learning  # noqa: E402

import csr_marl  # noqa: E402


@pytest.mark.parametrize("task", list(learning.TASKS))
def test_every_recipe_trains_and_scores_on_the_4096_feature_character_gram_observation(task):
    from csr_marl.train import TrainConfig

    config = TrainConfig(**learning.scaled(task, 1.0), overrides=learning.overrides("train"), seed=0)
    scenario = csr_marl.load_scenario(config.scenario, config.overrides)
    assert scenario.observation.text_features == 4096
    assert tuple(scenario.observation.text_chars) == (2, 5)
    assert scenario.tickets.split == "train"
    held_out = csr_marl.load_scenario(config.scenario, learning.overrides("test"))
    assert held_out.observation == scenario.observation and held_out.tickets.split == "test"


def _summary(team_return: float, manager_score: float, urgent_sla: float = 0.0) -> dict:
    """A recorded task whose strongest baseline is text_classifier, with the given paired lower ends."""
    baselines = {name: {"held-out": {"team_return": {"mean": value}}}
                 for name, value in (("random", 1.0), ("heuristic", 5.0), ("text_classifier", 9.0))}
    difference = lambda low: {"mean": low + 1, "low": low, "high": low + 2, "days": 20, "checkpoints": 3}  # noqa: E731
    classes = {learning.class_key(dim, value, kpi): {"mean": 0.0, "t_low": -0.1, "t_high": 0.1}
               for dim, value in learning.CLASSES for kpi in learning.CLASS_KPIS}
    classes[learning.class_key("priority", "urgent", "sla_attainment")] = {"mean": urgent_sla, "t_low": urgent_sla - 0.05,
                                                                          "t_high": urgent_sla + 0.05}
    paired = {"baseline": "text_classifier", "team_return": difference(team_return),
              "manager_score": difference(manager_score), "classes": classes}
    return {"baselines": baselines, "paired": paired}


def test_a_target_is_met_only_when_both_paired_intervals_are_above_zero():
    met = learning.target_check("resolve", _summary(0.5, 10.0))
    assert met["met"] and met["baseline"] == "text_classifier"
    assert met["wording"].startswith("trained vs strongest honest team on resolve, held-out, paired")
    assert not learning.target_check("resolve", _summary(-0.5, 10.0))["met"]  # team return's interval reaches 0
    assert not learning.target_check("resolve", _summary(0.5, -10.0))["met"]  # the manager's score's does


def test_a_win_bought_by_worse_urgent_service_is_not_met():
    bought = learning.target_check("resolve", _summary(0.5, 10.0, urgent_sla=-0.2))
    assert not bought["met"] and bought["worse"] == ["urgent sla_attainment"]
    unscored = _summary(0.5, 10.0)
    del unscored["paired"]["classes"]
    assert not learning.target_check("resolve", unscored)["met"]  # the guard unchecked: not met
    assert not learning.target_check("resolve", {"baselines": unscored["baselines"]})["met"]  # not paired at all


def test_a_class_difference_leaves_out_days_without_contacts_of_the_class():
    nan = math.nan
    d = learning.class_difference([[0.9, nan, 0.8, 0.7], [0.7, nan, nan, 0.9]], [0.5, 0.6, nan, 0.8])
    assert d["days"] == 2  # day 2 has no trained value, day 3 no baseline's
    assert d["mean"] == pytest.approx(((0.8 - 0.5) + (0.8 - 0.8)) / 2)
    assert d["t_low"] < d["mean"] < d["t_high"]
    assert math.isnan(learning.class_difference([[nan, 0.5]], [0.1, nan])["mean"])  # fewer than two days


def test_standard_day_starts_its_resolvers_from_the_committed_resolve_checkpoint_of_the_same_seed():
    """A clean checkout trains standard_day from the committed resolve checkpoints; only a resolve run of
    the same command that is not kept (no --write) is used in their place."""
    assert learning.TASKS["standard_day"]["curriculum"] == {"resolver": "resolve"}
    assert learning.curriculum_source("resolve", 1, trained_now=False, keep=False) == learning.kept_checkpoint("resolve", 1)
    assert learning.curriculum_source("resolve", 1, trained_now=True, keep=True) == learning.kept_checkpoint("resolve", 1)
    assert learning.curriculum_source("resolve", 1, trained_now=True, keep=False) == learning.checkpoint_of("resolve", 1)
    for seed in learning.seeds_of("standard_day"):
        assert learning.kept_checkpoint("resolve", seed).is_file(), f"resolve seed {seed} is not committed"


def test_scoring_side_by_side_gives_the_figures_of_one_process():
    """--rescore --workers 2 scores days in worker processes: each day must be the one a single process plays."""
    scenario = csr_marl.load_scenario("tasks/resolve", learning.overrides("test"))
    calls = [(learning.day_scores, scenario, "heuristic"), (learning.day_scores, scenario, "random")]
    alone = learning.in_parallel(calls, workers=1)
    side_by_side = learning.in_parallel(calls, workers=2)
    for (row, days), (row2, days2) in zip(alone, side_by_side):
        assert json.dumps(days, sort_keys=True) == json.dumps(days2, sort_keys=True)  # NaN: a day without the class
        assert row["team_return"] == row2["team_return"]
    assert alone[0][1]["team_return"] != alone[1][1]["team_return"]  # two policies, two different days


def test_the_page_says_how_long_the_run_that_scored_its_rows_took():
    recorded = {"wall_minutes": 34.5, "rescore": {"tasks": ["classify", "resolve"], "workers": 2, "wall_minutes": 3.25}}
    rescored = learning.wall_sentence(recorded, "python benchmarks/learning.py --rescore")
    assert rescored == " Wall time of the rescore (classify, resolve; 2 workers): 3.2 minutes."
    trained = learning.wall_sentence(recorded, "python benchmarks/learning.py --tasks classify --write")
    assert trained == " Wall time of the whole run: 34.5 minutes."
    assert learning.wall_sentence({}, "python benchmarks/learning.py --rescore") == ""
    page = (Path(learning.RESULTS) / "learning.md").read_text().splitlines()[2]
    committed = json.loads((Path(learning.RESULTS) / "learning.json").read_text())["rescore"]
    assert f"{committed['wall_minutes']:.1f} minutes." in page and "Wall time of the rescore" in page
