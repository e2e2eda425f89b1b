"""Tianshou, as its own multi-agent docs use it: a ``PettingZooEnv``, one algorithm per agent, a Collector.

The documented path is ``csr_marl.train.TianshouEnv`` (masks from ``info``, every reward credited to
the agent that earned it); Tianshou's plain ``PettingZooEnv`` is measured beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from env_helpers import SHORT
from extras import need

import csr_marl

torch = need("torch", "consumers")
need("tianshou", "consumers")
from credit_helpers import credited_to_learners, random_episode, replayed_returns  # noqa: E402
from tianshou.algorithm import PPO  # noqa: E402
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy  # noqa: E402
from tianshou.algorithm.multiagent.marl import MultiAgentOnPolicyAlgorithm  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import Collector, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv, PettingZooEnv  # noqa: E402
from tianshou.trainer import OnPolicyTrainerParams  # noqa: E402

from csr_marl.train import TianshouEnv  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["shared", "individual"])
def test_every_agent_s_whole_return_reaches_its_learner(mode):
    options = {"overrides": {**SHORT, "rewards.mode": mode}}
    env = TianshouEnv("standard_day", **options)
    batch = random_episode(env, seed=3, buffer_size=50_000)
    assert batch.terminated[-1] or batch.truncated[-1]
    credited = credited_to_learners(batch, env.agents)
    returns = replayed_returns("standard_day", options, env.finished[0].seed, batch.act)
    for agent in env.agents:
        assert credited[agent] == pytest.approx(returns[agent], abs=1e-6), agent
    assert sum(abs(v) for v in returns.values()) > 1.0  # rewards did flow


@pytest.mark.slow
def test_tianshou_s_plain_pettingzoo_env_loses_most_of_it():
    # Why the adapter exists: the plain wrapper credits only the rewards of each agent's own turns.
    options = {"overrides": {**SHORT, "rewards.mode": "shared"}}
    plain = PettingZooEnv(csr_marl.env("standard_day", flat_observations=False, **options))
    batch = random_episode(plain, seed=3, buffer_size=50_000)
    credited = sum(credited_to_learners(batch, plain.agents).values())
    returns = sum(replayed_returns("standard_day", options, 3, batch.act).values())
    assert abs(credited) < 0.5 * abs(returns)


class MaskedActor(torch.nn.Module):
    """Logits over actions from ``obs.obs``, forbidden actions masked out with ``obs.mask``."""

    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, n_actions))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        logits = self.net(torch.as_tensor(np.asarray(obs.obs), dtype=torch.float32))
        return logits.masked_fill(~torch.as_tensor(np.asarray(obs.mask)), -1e9), state


class Critic(torch.nn.Module):
    def __init__(self, n_obs: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))

    def forward(self, obs: Any, **kwargs: Any) -> torch.Tensor:
        return self.net(torch.as_tensor(np.asarray(obs.obs), dtype=torch.float32))


@pytest.mark.slow
def test_masked_ppo_per_agent_updates_on_the_default_env():
    torch.manual_seed(0)
    np.random.seed(0)
    env = TianshouEnv("standard_day", overrides={"horizon_minutes": 30})
    n_obs, n_actions = env.observation_space.shape[0], env.action_space.n
    algorithms = []
    for _ in env.agents:
        actor = MaskedActor(n_obs, n_actions)
        policy = DiscreteActorPolicy(actor=actor, action_space=env.action_space, observation_space=env.observation_space)
        # An agent that acted once in the rollout makes a batch of one: no std to normalise with.
        algorithms.append(
            PPO(policy=policy, critic=Critic(n_obs), optim=AdamOptimizerFactory(lr=3e-4), advantage_normalization=False)
        )
    team = MultiAgentOnPolicyAlgorithm(algorithms=algorithms, env=env)
    before = [p.detach().clone() for p in team.parameters()]
    venv = DummyVectorEnv([lambda: env])
    collector = Collector(team, venv, VectorReplayBuffer(20_000, 1))
    result = team.create_trainer(
        OnPolicyTrainerParams(
            training_collector=collector,
            max_epochs=1,
            epoch_num_steps=200,
            collection_step_num_env_steps=None,
            collection_step_num_episodes=1,
            update_step_num_repetitions=2,
            batch_size=64,
            test_in_training=False,
        )
    ).run()
    assert result.update_step >= 1 and result.train_episode >= 1
    changed = sum(not torch.equal(a, b) for a, b in zip(before, team.parameters()))
    assert changed >= len(algorithms)  # every agent's networks were updated
    illegal = env.env.unwrapped.center.rewards.totals["illegal_action"]
    assert illegal == 0.0  # the mask from info kept every action legal
