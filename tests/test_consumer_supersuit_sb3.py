"""SuperSuit + Stable-Baselines3 as PettingZoo's SB3 tutorial does it: the parallel env as a vector env."""

from __future__ import annotations

import numpy as np
import pytest
from env_helpers import masked_random
from extras import need

import csr_marl

supersuit = need("supersuit")
sb3 = need("stable_baselines3")

SHORT = {"overrides": {"horizon_minutes": 60}}


def test_ppo_learns_through_supersuit_s_vector_env_on_the_defaults():
    env = csr_marl.parallel_env(**SHORT)
    vec = supersuit.pettingzoo_env_to_vec_env_v1(env)
    vec = supersuit.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="stable_baselines3")
    assert vec.num_envs == 2 * len(env.possible_agents)
    # No seeds here: SuperSuit 3.11's SB3 wrapper cannot seed its ConcatVecEnv (reset(seed=...) and
    # PPO(seed=...) both raise AttributeError: 'ConcatVecEnv' object has no attribute 'seed').
    model = sb3.PPO("MlpPolicy", vec, n_steps=32, batch_size=64, n_epochs=2, device="cpu")
    model.learn(total_timesteps=2 * 32 * vec.num_envs)
    observations = vec.reset()
    actions, _ = model.predict(observations, deterministic=True)
    assert actions.shape == (vec.num_envs,)
    vec.close()


def test_per_role_spaces_still_pad_with_supersuit_s_wrappers():
    env = csr_marl.env("standard_day", uniform_spaces=False, **SHORT)
    env = supersuit.pad_action_space_v0(supersuit.pad_observations_v0(env))
    env.reset(seed=0)
    assert len({env.observation_space(a).shape for a in env.possible_agents}) == 1
    assert len({env.action_space(a).n for a in env.possible_agents}) == 1
    policy = masked_random(0)
    for _, agent in zip(range(300), env.agent_iter()):
        observation, _, terminated, truncated, info = env.last()
        assert observation.shape == env.observation_space(agent).shape
        mask = np.asarray(info["action_mask"])
        env.step(None if terminated or truncated else policy(mask))
