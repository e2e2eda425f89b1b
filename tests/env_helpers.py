"""Shared by the tests/test_env_*.py modules: short scenarios and policies that drive the environments."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

SHORT = {"horizon_minutes": 60, "warmup_minutes": 0}


def masked_random(seed: int) -> Callable[[np.ndarray], int]:
    rng = np.random.default_rng(seed)
    return lambda mask: int(rng.choice(np.flatnonzero(mask)))


def aec_turns(env: Any, choose: Callable[[str, np.ndarray], int]) -> Iterator[tuple[str, Any, float, dict, Any]]:
    """Play a reset AEC env to its end; yield (agent, observation, reward, info, action) per turn.
    ``choose(agent, mask)`` picks the action (the mask is ``info["action_mask"]``)."""
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else choose(agent, info["action_mask"])
        yield agent, observation, reward, info, action
        env.step(action)


def random_aec_episode(env: Any, seed: int) -> list[tuple[str, dict, float, dict, Any]]:
    env.reset(seed=seed)
    policy = masked_random(seed)
    return list(aec_turns(env, lambda agent, mask: policy(mask)))


def random_parallel_episode(env: Any, seed: int) -> list[tuple[dict, dict, dict, dict]]:
    """(actions, observations, rewards, infos) per epoch of a masked random team."""
    observations, infos = env.reset(seed=seed)
    policy = masked_random(seed)
    epochs = []
    while env.agents:
        actions = {agent: policy(info["action_mask"]) for agent, info in infos.items()}
        observations, rewards, _, _, infos = env.step(actions)
        epochs.append((actions, observations, rewards, infos))
    return epochs
