"""Stronger learners (``TrainConfig``'s ``smdp_tau``, ``central_critic``, ``init_from``): the semi-MDP
discount of each agent's turn, a critic that reads the global state, and a curriculum that starts a
role from another task's checkpoint with the same greedy actions.

Skipped when torch or Tianshou is not installed, except the config checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from extras import need

import csr_marl
from csr_marl.train import TrainConfig

SHORT_CLASSIFY = {"horizon_minutes": 60}
TINY = dict(steps=300, envs=2, episodes_per_update=2, eval_points=1, eval_episodes=1, hidden=32, batch_size=64)


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("train_learners")


def test_config_checks_the_new_options():
    with pytest.raises(ValueError, match="unknown role 'triager'"):
        TrainConfig(scenario="standard_day", steps=10, init_from={"triager": "x.pt"})
    with pytest.raises(ValueError, match="smdp_tau"):
        TrainConfig(scenario="standard_day", steps=10, smdp_tau=0)
    with pytest.raises(ValueError, match="warm_start_roles: unknown role 'desk'"):
        TrainConfig(scenario="standard_day", steps=10, warm_start="heuristic", warm_start_roles=["desk"])
    with pytest.raises(ValueError, match="warm_start: unknown policy 'expret'"):
        TrainConfig(scenario="standard_day", steps=10, warm_start="expret")
    with pytest.raises(ValueError, match="freeze_roles: 'triage' would keep random weights"):
        TrainConfig(scenario="standard_day", steps=10, freeze_roles=["triage"])
    with pytest.raises(ValueError, match="freeze_roles: 'triage' would keep random weights"):
        TrainConfig(scenario="standard_day", steps=10, warm_start="heuristic", warm_start_roles=["resolver"],
                    freeze_roles=["triage"])
    with pytest.raises(ValueError, match="freeze_roles: unknown role 'desk'"):
        TrainConfig(scenario="standard_day", steps=10, warm_start="heuristic", freeze_roles=["desk"])
    with pytest.raises(ValueError, match="role_lr: unknown role 'desk'"):
        TrainConfig(scenario="standard_day", steps=10, role_lr={"desk": 0.5})
    with pytest.raises(ValueError, match=r"role_lr\[triage\]: the factor must be positive"):
        TrainConfig(scenario="standard_day", steps=10, role_lr={"triage": 0.0})
    with pytest.raises(ValueError, match=r"role_lr\[triage\]: 'triage' is in freeze_roles"):
        TrainConfig(scenario="standard_day", steps=10, warm_start="heuristic", freeze_roles=["triage"],
                    role_lr={"triage": 0.5})
    plain = TrainConfig(scenario="standard_day", steps=10)
    assert plain.freeze_roles == [] and plain.role_lr == {}
    assert plain.smdp_tau is None and not plain.central_critic and plain.init_from == {}
    assert plain.warm_start is None and plain.warm_start_roles is None


def test_the_warm_start_imitates_its_teacher_in_the_roles_it_is_given():
    need("torch")
    import torch

    from csr_marl.train.checkpoint import build_networks, layout_signature, observation_layout
    from csr_marl.train.warm_start import record, warm_start

    day = csr_marl.load_scenario("standard_day", {"horizon_minutes": 90})
    layout = observation_layout(day)
    torch.manual_seed(0)
    actor, _ = build_networks(layout_signature(layout), layout.roles_layout["triage"].n_actions, hidden=32)
    before = {role: [p.clone() for p in net.parameters()] for role, net in actor.roles.items()}
    done = warm_start(actor, day, "declared_labels", episodes=3, epochs=100, seed=0, roles=["triage", "resolver"])
    assert set(done["train_accuracy"]) == {"triage", "resolver"}
    for role, net in actor.roles.items():
        moved = any(not torch.equal(a, b) for a, b in zip(before[role], net.parameters()))
        assert moved == (role != "escalation"), role  # a role left out keeps its weights
    # The fitted triage copies the customer's declared labels, as the teacher does, on its own decisions,
    # well above a policy that ignores the observation (the most frequent action's share).
    rows = record(day, "declared_labels", 3, 0)["triage"]
    actions = np.array([r[2] for r in rows])
    majority = np.bincount(actions).max() / len(actions)
    assert done["train_accuracy"]["triage"] > max(0.8, majority + 0.2), (done, majority)


def _hand_made_batch(tianshou_data, time):
    # One environment: an episode of five AEC steps (a b a a b), then two steps of an unfinished one.
    agents = ["a", "b", "a", "a", "b", "a", "b"]
    rewards = np.array([[1, 10], [2, 20], [3, 30], [4, 40], [5, 50], [6, 60], [7, 70]], dtype=float)
    done = np.array([0, 0, 0, 0, 1, 0, 0], dtype=bool)
    obs = tianshou_data.Batch(agent_id=np.array(agents), obs=np.arange(7.0)[:, None], mask=np.ones((7, 2), bool))
    if time is not None:
        obs.time = np.asarray(time)
    return tianshou_data.Batch(
        obs=obs, act=np.arange(7), rew=rewards, terminated=done, truncated=np.zeros(7, bool),
        obs_next=obs, info=tianshou_data.Batch(),
    )


def test_smdp_discount_of_each_turn_is_gamma_to_the_minutes_over_tau():
    need("torch")
    tianshou_data = need("tianshou.data")
    from csr_marl.train.turns import agent_turns

    batch = _hand_made_batch(tianshou_data, [0.0, 1.0, 4.0, 4.5, 10.0, 0.0, 2.0])
    turns = agent_turns(batch, np.arange(7), np.array([0, 100]), {"a": 0, "b": 1}, gamma=0.9, smdp_tau=2.0)
    assert list(turns.act) == [0, 2, 3, 1, 4]
    # a decides at minutes 0, 4, 4.5 (then the episode ends); b at 1 and 10
    assert turns.dt.tolist() == [4.0, 0.5, 0.0, 9.0, 0.0]
    assert turns.discount == pytest.approx([0.9**2, 0.9**0.25, 1.0, 0.9**4.5, 1.0])
    plain = agent_turns(batch, np.arange(7), np.array([0, 100]), {"a": 0, "b": 1})
    assert "discount" not in plain  # off by default: Tianshou's own GAE
    with pytest.raises(ValueError, match="with_time=True"):
        agent_turns(_hand_made_batch(tianshou_data, None), np.arange(7), np.array([0, 100]), {"a": 0, "b": 1}, smdp_tau=1.0)


def test_discounted_gae_by_hand_and_as_tianshou_with_a_constant_discount():
    need("torch")
    algorithm_base = need("tianshou.algorithm.algorithm_base")
    from csr_marl.train.turns import discounted_gae

    rew = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    v_s = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    v_next = np.array([1.0, 1.5, 0.0, 2.5, 0.0])  # each turn's next value (own trajectory)
    done = np.array([False, False, True, False, True])
    d = np.array([0.5, 0.8, 1.0, 0.25, 1.0])
    lam = 0.9
    advantage = discounted_gae(rew, v_s, v_next, d, done, lam)
    a2 = 3.0 - 1.5
    a1 = 2.0 + 0.8 * 1.5 - 1.0 + 0.8 * lam * a2
    a0 = 1.0 + 0.5 * 1.0 - 0.5 + 0.5 * lam * a1
    a4 = 5.0 - 2.5
    a3 = 4.0 + 0.25 * 2.5 - 2.0 + 0.25 * lam * a4
    assert advantage == pytest.approx([a0, a1, a2, a3, a4])
    same = np.full(5, 0.97)
    ours = discounted_gae(rew, v_s, v_next, same, done, lam)
    theirs = algorithm_base._gae(v_s, v_next * ~done, rew, done, 0.97, lam)
    assert ours == pytest.approx(theirs)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A tiny triage trained on a short classify (the curriculum's source)."""
    need("torch")
    need("tianshou")
    from csr_marl.train import train

    config = TrainConfig(scenario="tasks/classify", overrides=SHORT_CLASSIFY, seed=0, **TINY)
    return train(config, tmp_path_factory.mktemp("classify"), plot=False)


@pytest.mark.slow
def test_central_critic_reads_observation_and_state_and_its_checkpoint_plays(tmp_path):
    need("torch")
    need("tianshou")
    from csr_marl.train import load_checkpoint, load_checkpoint_policy, play_episode, train
    from csr_marl.train.tianshou_env import TianshouEnv

    scenario = csr_marl.load_scenario("tasks/classify", SHORT_CLASSIFY)
    env = TianshouEnv(scenario, credit="step", with_state=True, with_time=True)
    observation, _ = env.reset(seed=0)
    assert observation["state"].shape == env.env.unwrapped.state_space.shape
    assert observation["time"] >= 0.0

    config = TrainConfig(
        scenario="tasks/classify", overrides=SHORT_CLASSIFY, central_critic=True, smdp_tau=5.0, **TINY
    )
    run = train(config, tmp_path, plot=False)
    assert all(math.isfinite(run.curve[-1][k]) for k in ("loss", "vf_loss", "eval_return"))
    checkpoint = load_checkpoint(run.checkpoint)
    obs_size = len(checkpoint.layout["triage"])
    first = checkpoint.critic.roles["triage"][0]
    assert first.in_features == obs_size + observation["state"].shape[0]
    assert checkpoint.actor.roles["triage"][0].in_features == obs_size  # the actor is unchanged
    policy = load_checkpoint_policy(run.checkpoint)
    assert math.isfinite(play_episode(policy.scenario, policy, 1).team_return)


@pytest.mark.slow
def test_init_from_gives_the_source_greedy_actions_on_the_same_observations(source):
    import torch

    from csr_marl.train import load_checkpoint
    from csr_marl.train.checkpoint import build_networks, layout_signature, observation_layout
    from csr_marl.train.curriculum import init_role

    day = csr_marl.load_scenario("standard_day")
    layout = observation_layout(day)
    actor, critic = build_networks(layout_signature(layout), 33, hidden=32, state_size=len(layout.state_names))
    init_role("triage", source.checkpoint, actor, critic, layout)

    trained = load_checkpoint(source.checkpoint)
    names = trained.layout["triage"]
    rng = np.random.default_rng(0)
    x_source = torch.as_tensor(rng.random((64, len(names))), dtype=torch.float32)
    x_source[:, :3] = torch.tensor([1.0, 0.0, 0.0])
    x_day = torch.zeros((64, len(layout.feature_names("triage"))))
    where = {name: j for j, name in enumerate(layout.feature_names("triage"))}
    for i, name in enumerate(names):
        x_day[:, where[name]] = x_source[:, i]
    source_actions = trained.actor.run(x_source).argmax(dim=1)
    day_logits = actor.run(x_day)
    legal = [layout.action_names("triage").index(a) for a in observation_layout(trained.scenario()).action_names("triage")]
    assert torch.equal(day_logits[:, legal].argmax(dim=1), source_actions)
    assert torch.equal(day_logits.argmax(dim=1), source_actions)  # padding rows start at 0, below

    state = torch.zeros((64, len(layout.state_names)))
    assert torch.allclose(critic.run(torch.cat((x_day, state), dim=1)), trained.critic.run(x_source), atol=1e-5)


def test_an_evaluation_copy_plays_as_the_checkpoint_does_and_seeds_a_curriculum(source, tmp_path):
    import torch

    from csr_marl.train import CheckpointError, evaluation_copy, load_checkpoint, load_checkpoint_policy, play_episode
    from csr_marl.train.checkpoint import build_networks, layout_signature, observation_layout
    from csr_marl.train.curriculum import init_role

    copy = evaluation_copy(source.checkpoint, tmp_path / "kept" / "classify.pt")
    assert copy.stat().st_size < 0.6 * source.checkpoint.stat().st_size
    kept = load_checkpoint(copy)
    assert kept.critic is None and kept.optimizer_state is None
    whole, small = load_checkpoint_policy(source.checkpoint), load_checkpoint_policy(copy)
    for seed in (0, 1):
        a, b = play_episode(whole.scenario, whole, seed), play_episode(small.scenario, small, seed)
        assert a.team_return == b.team_return and a.kpis == b.kpis
    # A curriculum from the copy: the actor as from the whole checkpoint, the critic left as it was.
    layout = observation_layout(csr_marl.load_scenario("standard_day"))
    networks = [build_networks(layout_signature(layout), 33, hidden=32, state_size=0) for _ in range(2)]
    networks[1][1].load_state_dict(networks[0][1].state_dict())  # the same critics before
    init_role("triage", source.checkpoint, *networks[0], layout)
    init_role("triage", copy, *networks[1], layout)
    for a, b in zip(networks[0][0].roles["triage"].parameters(), networks[1][0].roles["triage"].parameters()):
        assert torch.equal(a, b)
    copied = list(networks[0][1].roles["triage"].parameters())
    kept = list(networks[1][1].roles["triage"].parameters())
    assert not all(torch.equal(a, b) for a, b in zip(copied, kept))  # the copy's critic was not copied
    other = tmp_path / "other.pt"
    torch.save({"format": "something else"}, other)
    with pytest.raises(CheckpointError, match="not a csr_marl checkpoint"):
        evaluation_copy(other, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


@pytest.mark.slow
def test_a_frozen_role_keeps_its_curriculum_weights_while_the_others_learn(source, tmp_path):
    import torch

    from csr_marl.train import load_checkpoint, train
    from csr_marl.train.checkpoint import build_networks, layout_signature, observation_layout
    from csr_marl.train.curriculum import init_role

    short_day = {"horizon_minutes": 45}
    config = TrainConfig(
        scenario="standard_day", overrides=short_day, init_from={"triage": str(source.checkpoint)},
        warm_start="heuristic", warm_start_roles=["resolver", "escalation"], warm_start_episodes=1,
        warm_start_epochs=2, freeze_roles=["triage"], seed=1, **{**TINY, "steps": 600},
    )
    run = train(config, tmp_path / "frozen", plot=False)
    unfrozen = train(TrainConfig(**{**config.model_dump(), "freeze_roles": []}), tmp_path / "free", plot=False)
    trained, moved = load_checkpoint(run.checkpoint), load_checkpoint(unfrozen.checkpoint)
    # The triage as the curriculum starts it: the source's weights, copied onto the day's layout.
    layout = observation_layout(trained.scenario())
    begun, critic = build_networks(layout_signature(layout), 33, hidden=32, state_size=0)
    init_role("triage", source.checkpoint, begun, critic, layout)
    same = lambda a, b, role: all(torch.equal(x, y) for x, y in zip(a.roles[role].parameters(), b.roles[role].parameters()))  # noqa: E731
    assert not same(begun, moved.actor, "triage")  # without freezing, the day moves the triage
    assert same(begun, trained.actor, "triage")
    assert not same(moved.actor, trained.actor, "resolver")  # the others still learn, differently


def test_a_role_with_its_own_rate_moves_that_much_less_from_where_it_started(source, tmp_path):
    """role_lr: the triage's first update is Adam's, a step of about lr per weight, so at a quarter of the
    rate it moves about a quarter as far from the curriculum's weights; the other roles learn as before."""
    import torch

    from csr_marl.train import load_checkpoint, train
    from csr_marl.train.checkpoint import build_networks, layout_signature, observation_layout
    from csr_marl.train.curriculum import init_role

    config = TrainConfig(
        scenario="standard_day", overrides={"horizon_minutes": 45}, init_from={"triage": str(source.checkpoint)},
        seed=1, **{**TINY, "steps": 100, "repeat": 1, "batch_size": 100_000},  # one gradient step
    )
    full = load_checkpoint(train(config, tmp_path / "full", plot=False).checkpoint)
    slow_config = TrainConfig(**{**config.model_dump(), "role_lr": {"triage": 0.25}})
    slow = load_checkpoint(train(slow_config, tmp_path / "slow", plot=False).checkpoint)
    layout = observation_layout(full.scenario())
    begun, critic = build_networks(layout_signature(layout), 33, hidden=32, state_size=0)
    init_role("triage", source.checkpoint, begun, critic, layout)

    def moved(actor, role: str) -> float:
        return sum(float((a - b).detach().abs().sum()) for a, b in zip(actor.roles[role].parameters(), begun.roles[role].parameters()))

    ratio = moved(slow.actor, "triage") / moved(full.actor, "triage")
    assert 0.15 < ratio < 0.35, ratio  # 1 if the factor were ignored
    same = lambda role: all(torch.equal(x, y) for x, y in zip(full.actor.roles[role].parameters(), slow.actor.roles[role].parameters()))  # noqa: E731
    assert same("resolver") and same("escalation")  # the same rollout and gradients, at the full rate


def test_init_from_refuses_a_role_the_checkpoint_or_scenario_lacks(source, tmp_path):
    from csr_marl.train import CheckpointError, train

    bad = TrainConfig(scenario="tasks/resolve", init_from={"resolver": str(source.checkpoint)}, **TINY)
    with pytest.raises(CheckpointError, match="has no resolver"):
        train(bad, tmp_path / "a", plot=False)
    unstaffed = TrainConfig(scenario="tasks/resolve", init_from={"triage": str(source.checkpoint)}, **TINY)
    with pytest.raises(CheckpointError, match="does not staff triage"):
        train(unstaffed, tmp_path / "b", plot=False)
    missing = TrainConfig(scenario="tasks/resolve", init_from={"resolver": "no/such.pt"}, **TINY)
    with pytest.raises(FileNotFoundError, match=r"init_from\[resolver\]: no checkpoint file"):
        train(missing, tmp_path / "c", plot=False)
    # Text weights go by feature name: onto another hashing, text_i would name other n-grams.
    rehashed = TrainConfig(scenario="standard_day", overrides={"horizon_minutes": 45, "observation.text_features": 64},
                           init_from={"triage": str(source.checkpoint)}, **TINY)
    with pytest.raises(CheckpointError, match="hashes the text into 32 features of words, this scenario into 64"):
        train(rehashed, tmp_path / "d", plot=False)
    assert not any((tmp_path / name).exists() for name in "abc")  # refused before the output folder is made


def test_stronger_learners_same_seed_same_curve(source, tmp_path):
    from csr_marl.train import train

    config = TrainConfig(
        scenario="tasks/classify", overrides=SHORT_CLASSIFY, smdp_tau=5.0, central_critic=True,
        init_from={"triage": str(source.checkpoint)}, seed=3, **TINY,
    )
    runs = [train(config, tmp_path / str(i), plot=False) for i in range(2)]
    strip = lambda rows: [{k: v for k, v in row.items() if k not in ("cpu_seconds", "wall_seconds")} for row in rows]  # noqa: E731
    assert strip(runs[0].curve) == strip(runs[1].curve)


def test_train_command_takes_the_new_options(source, tmp_path):
    import json

    import typer
    from typer.testing import CliRunner

    from csr_marl.cli.train import train_command

    app = typer.Typer()
    app.command("train")(train_command)
    app.command("unused")(lambda: None)
    runner = CliRunner()
    out = tmp_path / "run"
    ran = runner.invoke(app, [
        "train", "tasks/classify", "--steps", "100", "--out", str(out), "--set", "horizon_minutes=30",
        "--eval-points", "1", "--eval-episodes", "1", "--hp", "hidden=32", "--hp", "envs=1",
        "--smdp-tau", "5", "--central-critic", "--init-from", f"triage={source.checkpoint}",
    ])
    assert ran.exit_code == 0, ran.output
    config = json.loads((out / "run.json").read_text())["config"]
    assert config["smdp_tau"] == 5.0 and config["central_critic"] and config["init_from"] == {"triage": str(source.checkpoint)}
    for option, message in (("triager=x.pt", "unknown role 'triager'"), ("triage", "expected ROLE=CHECKPOINT"),
                            ("triage=no/such.pt", "no checkpoint file there")):
        bad = runner.invoke(app, ["train", "tasks/classify", "--init-from", option])
        assert bad.exit_code == 2 and message in " ".join(bad.output.split()), bad.output
