"""The single-agent tasks as Gymnasium, Stable-Baselines3 and sb3-contrib users take them: by id."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from extras import need

import csr_marl
import csr_marl.envs
from csr_marl.envs.driver import IllegalActionWarning

gym.register_envs(csr_marl.envs)
IDS = [f"csr_marl/{name}" for name in csr_marl.envs.TASKS]
SHORT = {"overrides": {"horizon_minutes": 90}}


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env_passes(env_id):
    env = gym.make(env_id, **SHORT)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_stable_baselines3_check_env_passes(env_id):
    sb3_checker = need("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3 warns about anything a learner would trip on
        # ... but its checker samples actions without the mask, which the environment warns about
        warnings.simplefilter("ignore", IllegalActionWarning)
        sb3_checker.check_env(gym.make(env_id, **SHORT).unwrapped)


def test_the_learner_s_rewards_add_up_to_the_team_return_when_alone():
    env = gym.make("csr_marl/Classify-v4", overrides={"horizon_minutes": 120})
    observation, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    total, steps = 0.0, 0
    while True:
        mask = env.unwrapped.action_masks()
        assert np.array_equal(mask, info["action_mask"].astype(bool)) and not mask[-1]
        observation, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            break
    assert steps > 20
    assert total == pytest.approx(env.unwrapped.center.result().team_return, abs=1e-6)


def test_colleagues_keep_the_floor_running_between_the_learner_s_decisions():
    env = gym.make("csr_marl/Resolver-v4", **SHORT)
    env.reset(seed=1)
    decided = 0
    truncated = False
    while not truncated:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        _, _, _, truncated, _ = env.step(int(legal[0]))
        decided += 1
    center = env.unwrapped.center
    assert center.flow["resolved"] > decided / 4  # nine heuristic resolvers did most of the work
    assert env.unwrapped.center.end_time == 90


def test_an_unmasked_learner_pays_for_illegal_actions_and_the_episode_goes_on():
    env = gym.make("csr_marl/Resolve-v4", **SHORT)
    env.reset(seed=2)
    noop = env.action_space.n - 1
    _, reward, terminated, truncated, _ = env.step(noop)  # never legal
    assert env.unwrapped.center.rewards.totals["illegal_action"] == pytest.approx(-0.1)
    strict = gym.make("csr_marl/Resolve-v4", strict=True, **SHORT)
    strict.reset(seed=2)
    with pytest.raises(csr_marl.sim.IllegalActionError):
        strict.step(noop)


def test_sb3_ppo_trains_on_a_task():
    sb3 = need("stable_baselines3")
    env = gym.make("csr_marl/Resolve-v4", **SHORT)
    model = sb3.PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu")
    with pytest.warns(IllegalActionWarning, match="resolver_0"):  # plain PPO ignores the mask
        model.learn(total_timesteps=256)
    observation, _ = env.reset(seed=5)
    action, _ = model.predict(observation, deterministic=True)
    assert env.action_space.contains(int(action))


@pytest.mark.parametrize("env_id", ["csr_marl/Classify-v4", "csr_marl/Resolver-v4"])
def test_sb3_contrib_maskable_ppo_trains_and_acts_legally(env_id):
    contrib = need("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = gym.make(env_id, **SHORT)
    model = contrib.MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    observation, _ = env.reset(seed=7)
    for _ in range(50):
        action, _ = model.predict(observation, action_masks=get_action_masks(env), deterministic=True)
        observation, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            break
    assert env.unwrapped.center.rewards.totals["illegal_action"] == 0.0
