"""Training (extra ``csr-marl[train]``): a short PPO run on ``classify`` learns without blowing up,
its checkpoint round-trips into a policy, and that policy is scored as the baselines are.

Skipped when torch or Tianshou is not installed, except the checks that need neither.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from extras import need

import csr_marl
from csr_marl.train import TrainConfig, TrainingUnavailable, require_training_extra
from csr_marl.train.evaluation import play_episode

SHORT_CLASSIFY = {"horizon_minutes": 60}


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("train")


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tianshou", None)  # import tianshou -> ImportError
    with pytest.raises(TrainingUnavailable, match=r"csr-marl\[train\]"):
        require_training_extra()
    with pytest.raises(TrainingUnavailable, match=r"csr-marl\[train\]"):
        csr_marl.train.load_checkpoint_policy  # noqa: B018  (lazy attribute)


def test_config_rejects_unknown_fields_and_bad_values():
    with pytest.raises(ValueError, match="learning_rate"):
        TrainConfig(scenario="tasks/classify", steps=100, learning_rate=0.1)
    with pytest.raises(ValueError, match="eval_points"):
        TrainConfig(scenario="tasks/classify", steps=5, eval_points=10)


def test_an_episode_through_the_environment_scores_as_simulate_does():
    scenario = csr_marl.load_scenario("standard_day", {"horizon_minutes": 90})
    policy = csr_marl.policies.HeuristicPolicy(scenario)
    seed = lambda: np.random.SeedSequence(entropy=0, spawn_key=(1,))  # noqa: E731  (consumed by each run)
    through_env = play_episode(scenario, policy, seed())
    core_only = csr_marl.simulate(scenario, policy, seed())
    assert through_env.team_return == core_only.team_return
    # The environment also counts illegal actions (none here); the core's run has no such KPI.
    env_only = {"illegal_actions": 0, "illegal_action_share": 0.0}
    assert through_env.kpis == pytest.approx({**core_only.kpis, **env_only}, nan_ok=True)


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    need("torch")
    need("tianshou")
    from csr_marl.train import train

    config = TrainConfig(
        scenario="tasks/classify", overrides=SHORT_CLASSIFY, steps=300, seed=0, envs=2,
        episodes_per_update=2, eval_points=2, eval_episodes=1, hidden=32, batch_size=64,
    )
    return train(config, tmp_path_factory.mktemp("classify"))


def test_short_training_run_has_finite_losses_and_writes_its_outputs(short_run):
    assert len(short_run.curve) == 2
    assert short_run.curve[-1]["env_steps"] >= 300
    for row in short_run.curve:
        for column in ("loss", "actor_loss", "vf_loss", "entropy", "eval_return"):
            assert math.isfinite(row[column]), (column, row)
    names = {p.name for p in short_run.out_dir.iterdir()}
    assert {"checkpoint.pt", "curve.csv", "curve.png", "run.json"} <= names


def test_a_finished_run_loads_back_as_train_returned_it(short_run, tmp_path):
    from csr_marl.train import load_run

    loaded = load_run(short_run.out_dir)
    assert loaded.curve == short_run.curve  # every value, exactly (integers come back as floats)
    assert (loaded.checkpoint, loaded.kpis, loaded.cpu_seconds) == (
        short_run.checkpoint, short_run.kpis, short_run.cpu_seconds)
    assert loaded.summary["config"] == short_run.summary["config"]
    with pytest.raises(FileNotFoundError, match="run.json"):
        load_run(tmp_path)


def test_readme_loader_is_importable_from_the_package():
    need("torch")
    need("tianshou")
    import csr_marl
    from csr_marl.train import load_checkpoint_policy

    assert csr_marl.load_checkpoint_policy is load_checkpoint_policy


def test_same_seed_same_curve_and_checkpoint(short_run, tmp_path):
    """Three runs with --seed 0 gave 9.67 / 10.33 / 10.30: minibatches came from numpy's global RNG."""
    import torch

    from csr_marl.train import train

    again = train(TrainConfig(**short_run.summary["config"]), tmp_path, plot=False)
    timing = {"cpu_seconds", "wall_seconds"}
    strip = lambda rows: [{k: v for k, v in row.items() if k not in timing} for row in rows]  # noqa: E731
    assert strip(again.curve) == strip(short_run.curve)
    first = torch.load(short_run.checkpoint, weights_only=False)
    second = torch.load(again.checkpoint, weights_only=False)
    for part in ("actor", "critic"):
        for name, tensor in first[part].items():
            assert torch.equal(tensor, second[part][name]), (part, name)


def test_checkpoint_round_trips_into_the_same_policy(short_run):
    import torch

    from csr_marl.train import load_checkpoint, load_checkpoint_policy

    checkpoint = load_checkpoint(short_run.checkpoint)
    assert checkpoint.config.scenario == "tasks/classify"
    again = load_checkpoint(short_run.checkpoint)
    x = torch.rand(8, len(next(iter(checkpoint.layout.values()))))
    x[:, :3] = torch.tensor([1.0, 0.0, 0.0])  # triage rows
    assert torch.equal(checkpoint.actor.run(x), again.actor.run(x))

    policy = load_checkpoint_policy(short_run.checkpoint)
    scenario = policy.scenario
    first = play_episode(scenario, policy, 3)
    second = play_episode(scenario, load_checkpoint_policy(short_run.checkpoint), 3)
    assert first.team_return == second.team_return  # greedy and deterministic
    assert first.kpis["triage_accuracy"] == second.kpis["triage_accuracy"]
    sampled = [play_episode(scenario, load_checkpoint_policy(short_run.checkpoint, greedy=False), 3) for _ in range(2)]
    assert sampled[0].team_return == sampled[1].team_return  # drawn from the core's policy stream


def test_checkpoint_policy_is_bound_to_the_core_it_plays(short_run):
    from csr_marl.cli.train import policy_from_option
    from csr_marl.sim.center import ContactCenter

    policy = policy_from_option(f"checkpoint:{short_run.checkpoint}", csr_marl.load_scenario("tasks/classify"))
    center = ContactCenter(policy.scenario, 0)
    decision = center.next_decision()
    with pytest.raises(RuntimeError, match="bind"):
        policy(decision)
    policy.bind(center)
    assert policy(decision) in decision.legal
    assert policy_from_option("heuristic", policy.scenario) == "heuristic"


def test_checkpoint_refuses_a_scenario_with_another_observation_layout(short_run):
    from csr_marl.train import CheckpointError, load_checkpoint_policy

    with pytest.raises(CheckpointError, match="cannot play scenario standard_day"):
        load_checkpoint_policy(short_run.checkpoint, "standard_day")


def test_evaluation_reports_the_baselines_columns(short_run):
    from csr_marl.cli.train import evaluate_trained
    from csr_marl.whatif.baselines import HEADLINE

    row = evaluate_trained(short_run.checkpoint, episodes=2)
    assert row.policy == "trained" and row.scenario == "tasks/classify" and row.episodes == 2
    assert set(HEADLINE) <= set(row.estimates)
    assert math.isfinite(row.estimates["team_return"].mean)


def test_agent_turns_credit_each_agent_with_what_it_earned_until_its_next_decision():
    need("torch")
    tianshou_data = need("tianshou.data")
    from csr_marl.train.turns import agent_turns

    # One environment: an episode of five AEC steps (a b a a b), then two steps of an unfinished one.
    agents = ["a", "b", "a", "a", "b", "a", "b"]
    rewards = np.array([[1, 10], [2, 20], [3, 30], [4, 40], [5, 50], [6, 60], [7, 70]], dtype=float)
    done = np.array([0, 0, 0, 0, 1, 0, 0], dtype=bool)
    obs = tianshou_data.Batch(agent_id=np.array(agents), obs=np.arange(7.0)[:, None], mask=np.ones((7, 2), bool))
    batch = tianshou_data.Batch(
        obs=obs, act=np.arange(7), rew=rewards, terminated=done, truncated=np.zeros(7, bool),
        obs_next=obs, info=tianshou_data.Batch(),
    )
    turns = agent_turns(batch, np.arange(7), np.array([0, 100]), {"a": 0, "b": 1})
    assert list(turns.obs.agent_id) == ["a", "a", "a", "b", "b"]  # the unfinished episode is dropped
    assert list(turns.act) == [0, 2, 3, 1, 4]
    # a acts at steps 0, 2, 3: earns steps 0-1, then 2, then 3-4 (to the episode's end)
    assert turns.rew.tolist() == [1 + 2, 3, 4 + 5, 20 + 30 + 40, 50]
    assert list(turns.obs_next.obs[:, 0]) == [2, 3, 3, 4, 4]  # own next observation (any at the end)
    assert list(turns.terminated) == [False, False, True, False, True]


def test_cli_modules_load_without_torch():
    code = "import sys, csr_marl.cli.train, csr_marl.train; sys.exit('torch' in sys.modules or 'tianshou' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_train_and_evaluate_commands(tmp_path):
    need("torch")
    need("tianshou")
    import typer
    from typer.testing import CliRunner

    from csr_marl.cli.train import evaluate_command, train_command

    app = typer.Typer()
    app.command("train")(train_command)
    app.command("evaluate")(evaluate_command)
    runner = CliRunner()
    out = tmp_path / "run"
    trained = runner.invoke(app, [
        "train", "tasks/classify", "--steps", "100", "--out", str(out), "--set", "horizon_minutes=30",
        "--eval-points", "1", "--eval-episodes", "1", "--hp", "hidden=16", "--hp", "envs=1",
    ])
    assert trained.exit_code == 0, trained.output
    assert "step" in trained.output and (out / "checkpoint.pt").is_file()
    ran = json.loads((out / "run.json").read_text())["final"]["env_steps"]
    if ran != 100:  # whole rollouts: the rounding is said, with the steps actually run
        assert f"ran {int(ran):,} environment steps for --steps 100" in " ".join(trained.output.split())
    scored = runner.invoke(app, ["evaluate", str(out / "checkpoint.pt"), "--episodes", "2", "--no-compare", "--out", str(tmp_path)])
    assert scored.exit_code == 0, scored.output
    assert "trained" in scored.output and (tmp_path / "trained_baseline.md").is_file()
    bad = runner.invoke(app, ["train", "tasks/classify", "--hp", "gama=0.9"])
    assert bad.exit_code == 2 and "gama" in bad.output


def test_simulate_and_baseline_play_a_checkpoint_as_evaluate_does(short_run):
    import json

    from typer.testing import CliRunner

    from csr_marl.cli import app
    from csr_marl.cli.train import evaluate_trained
    from csr_marl.train import load_checkpoint_policy

    option = f"checkpoint:{short_run.checkpoint}"
    sets = [arg for key, value in SHORT_CLASSIFY.items() for arg in ("--set", f"{key}={value}")]
    runner = CliRunner()
    shown = runner.invoke(app, ["simulate", "tasks/classify", "--policy", option, "--seed", "4", "--json", *sets])
    assert shown.exit_code == 0, shown.output
    policy = load_checkpoint_policy(short_run.checkpoint)
    assert json.loads(shown.output)["team_return"] == play_episode(policy.scenario, policy, 4).team_return

    scored = runner.invoke(app, ["baseline", "--policy", option, "--episodes", "2", "--out", str(short_run.out_dir / "b")])
    assert scored.exit_code == 0, scored.output
    written = json.loads((short_run.out_dir / "b" / "trained_baseline.json").read_text())
    expected = evaluate_trained(short_run.checkpoint, episodes=2).estimates["team_return"].mean
    assert written["policy"] == "trained"
    assert written["scenarios"]["tasks/classify"]["team_return"]["mean"] == expected

    missing = runner.invoke(app, ["simulate", "tasks/classify", "--policy", "checkpoint:no/such/checkpoint.pt"])
    assert missing.exit_code == 2 and "no checkpoint file at no/such/checkpoint.pt" in missing.output
