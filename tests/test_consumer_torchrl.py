"""TorchRL's ``PettingZooWrapper`` as its docs use it, on the AEC and parallel environments' defaults."""

from __future__ import annotations

import warnings

import pytest

from extras import need

import csr_marl

torch = need("torch", "consumers")
pettingzoo_lib = need("torchrl.envs.libs.pettingzoo")
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

SHORT = {"overrides": {"horizon_minutes": 240}}
MAKERS = {"aec": csr_marl.env, "parallel": csr_marl.parallel_env}


def wrapped(kind: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchRL notes the info keys it could not stack
        return pettingzoo_lib.PettingZooWrapper(MAKERS[kind](**SHORT), use_mask=True, categorical_actions=True)


@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_specs_check_and_a_random_rollout_stays_legal(kind):
    env = wrapped(kind)
    grouped = sorted(agent for agents in env.group_map.values() for agent in agents)
    assert grouped == sorted(env._env.possible_agents)  # TorchRL's default groups cover every agent
    check_env_specs(env)
    rollout = env.rollout(100)
    assert rollout.batch_size[0] == 100
    center = env._env.unwrapped.center
    assert center.rewards.totals["illegal_action"] == 0.0  # TorchRL's random actions respect the masks
    acting = sum(rollout[group, "mask"].sum(-1) for group in env.group_map)
    if kind == "aec":
        assert (acting == 1).all()  # one agent acts per AEC step
    else:
        due = sum(rollout[group, "info", "decision_due"].sum(-1) for group in env.group_map)
        assert due.max() >= 2  # decision epochs: several agents decide in one step


class MaskedRandomPolicy:
    """Uniform over each agent's legal actions (``action_mask``); agents not acting get any action."""

    def __init__(self, groups: list[str], seed: int) -> None:
        self.groups = groups
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, td):
        for group in self.groups:
            weights = td[group, "action_mask"].float()
            weights[weights.sum(-1) == 0] = 1.0  # nobody asked: the choice is ignored
            flat = weights.reshape(-1, weights.shape[-1])
            actions = torch.multinomial(flat, 1, generator=self.generator).reshape(weights.shape[:-1])
            td.set((group, "action"), actions)
        return td


@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_a_collector_with_a_masked_random_policy(kind):
    env = wrapped(kind)
    policy = MaskedRandomPolicy(list(env.group_map), seed=0)
    collector = Collector(env, policy, frames_per_batch=100, total_frames=300)
    batches = list(collector)
    collector.shutdown()
    assert len(batches) == 3 and all(batch.numel() == 100 for batch in batches)
    rewards = torch.cat([batch["next", group, "reward"].flatten() for batch in batches for group in env.group_map])
    assert torch.isfinite(rewards).all() and rewards.abs().sum() > 0
    assert env._env.unwrapped.center.rewards.totals["illegal_action"] == 0.0
