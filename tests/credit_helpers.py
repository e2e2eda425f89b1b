"""How much of each agent's return reaches its Tianshou learner: shared by the consumer test and
``benchmarks/studies/tianshou_credit.py``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv

import csr_marl


def random_episode(env: Any, seed: int, buffer_size: int = 500_000) -> Any:
    """One episode of Tianshou's masked random agents; the buffer's transitions in order."""
    np.random.seed(seed)  # Tianshou's random agent draws from numpy's global generator
    algorithms = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents]
    team = MultiAgentOffPolicyAlgorithm(algorithms=algorithms, env=env)
    collector = Collector(team, DummyVectorEnv([lambda: env]), VectorReplayBuffer(buffer_size, 1))
    collector.reset(reset_buffer=True, gym_reset_kwargs={"seed": seed})
    collector.collect(n_episode=1)
    buffer = collector.buffer
    return buffer[np.arange(len(buffer))]


def credited_to_learners(batch: Any, agents: list[str]) -> dict[str, float]:
    """What Tianshou's dispatcher hands each agent's learner: its column, on its own transitions."""
    return {a: float(batch.rew[batch.obs.agent_id == a, i].sum()) for i, a in enumerate(agents)}


def replayed_returns(scenario: str, options: dict[str, Any], seed: int, actions: np.ndarray) -> dict[str, float]:
    """Each agent's return in the plain AEC env (every ``last()`` reward), replaying ``actions``."""
    env = csr_marl.env(scenario, **options)
    env.reset(seed=seed)
    returns: dict[str, float] = defaultdict(float)
    turns = iter(actions)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        returns[agent] += reward
        action = next(turns, None)
        env.step(None if terminated or truncated else int(action))
    return dict(returns)
