"""Smoke tests with the RL libraries users plug the environment into (skipped when not installed).

SuperSuit's padding wrappers and TorchRL's wrapper take Box observations with the mask in
``info["action_mask"]`` (TorchRL reads the mask from one place only): ``flat_observations=True``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from env_helpers import SHORT, masked_random

import csr_marl


def test_supersuit_padding_wrappers_run_an_episode_prefix():
    supersuit = pytest.importorskip("supersuit")
    env = csr_marl.env("standard_day", overrides=SHORT, flat_observations=True)
    env = supersuit.pad_action_space_v0(supersuit.pad_observations_v0(env))
    env.reset(seed=0)
    assert len({env.observation_space(a).shape for a in env.possible_agents}) == 1
    assert len({env.action_space(a).n for a in env.possible_agents}) == 1
    policy = masked_random(0)
    for _, agent in zip(range(300), env.agent_iter()):
        observation, _, terminated, truncated, info = env.last()
        assert observation.shape == env.observation_space(agent).shape
        env.step(None if terminated or truncated else policy(info["action_mask"]))


def test_tianshou_pettingzoo_env_runs_an_episode_prefix():
    pytest.importorskip("torch")
    tianshou_env = pytest.importorskip("tianshou.env")
    env = tianshou_env.PettingZooEnv(csr_marl.env("standard_day", overrides=SHORT, uniform_spaces=True))
    observation, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(300):
        action = int(rng.choice(np.flatnonzero(observation["mask"])))
        observation, rewards, terminated, truncated, _ = env.step(action)
        assert len(rewards) == len(env.agents)
        if terminated or truncated:
            break


def test_torchrl_pettingzoo_wrapper_with_masks_runs_an_episode_prefix():
    pytest.importorskip("torch")
    pettingzoo_lib = pytest.importorskip("torchrl.envs.libs.pettingzoo")
    aec = csr_marl.env("standard_day", overrides=SHORT, flat_observations=True)
    by_role = {
        role: [a for a in aec.possible_agents if a.startswith(role)] for role in ("triage", "resolver", "escalation")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = pettingzoo_lib.PettingZooWrapper(aec, use_mask=True, categorical_actions=True, group_map=by_role)
        rollout = env.rollout(50)
    assert rollout.batch_size[0] == 50
    assert np.isfinite(rollout["next", "resolver", "reward"].numpy()).all()
    acting = rollout["resolver", "mask"].sum(-1) + rollout["triage", "mask"].sum(-1) + rollout["escalation", "mask"].sum(-1)
    assert (acting == 1).all()  # one agent acts per AEC step
