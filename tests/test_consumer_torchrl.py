"""TorchRL: its own ``PettingZooWrapper`` as its docs use it, on the AEC and parallel environments'
defaults, and ``csr_marl.envs.torchrl.TorchRLEnv``, the route with no illegal action."""

from __future__ import annotations

import warnings

import pytest

from extras import need

import csr_marl
from csr_marl.envs.driver import IllegalActionWarning

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
    env.set_seed(0)  # fixed seeds for the episode and for TorchRL's random actions: a run never depends on
    torch.manual_seed(0)  # which tests ran before this one in the process (pytest-xdist reorders them)
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
@pytest.mark.slow
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


def torchrl_env(**options):
    from csr_marl.envs.torchrl import TorchRLEnv

    return TorchRLEnv("standard_day", **{"overrides": {"horizon_minutes": 240, "warmup_minutes": 0}, **options})


def masked_actor(env):
    """A small TorchRL actor whose distribution reads the mask: what a PPO learner over the env uses."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MaskedCategorical, ProbabilisticActor

    torch.manual_seed(0)
    n_obs, n_actions = env.observation_spec["observation"].shape[-1], env.action_spec.n
    net = torch.nn.Sequential(torch.nn.Linear(n_obs, 32), torch.nn.Tanh(), torch.nn.Linear(32, n_actions))
    return ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"},
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )


def illegal_so_far(env) -> int:
    running = env.center.kpis.extra.get("illegal_actions", 0)
    return int(running + sum(result.kpis["illegal_actions"] for result in env.finished))


def test_torchrl_env_passes_torchrl_s_spec_check():
    check_env_specs(torchrl_env(seed=0))


@pytest.mark.parametrize("policy", ["masked actor", "MaskedRandomPolicy", "rollout without a policy"])
def test_torchrl_env_collects_whole_episodes_with_no_illegal_action(policy):
    from csr_marl.envs.torchrl import MaskedRandomPolicy

    env = torchrl_env(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllegalActionWarning)
        if policy == "rollout without a policy":  # TorchRL's own random actions, from the live spec
            batches = [env.rollout(1500, break_when_any_done=False)]
        else:
            actor = masked_actor(env) if policy == "masked actor" else MaskedRandomPolicy(seed=0)
            # TorchRL asks a collector to say whether it may add the transforms a policy needs (from v0.15 it
            # will): yes, as its warning advises.
            collector = Collector(env, actor, frames_per_batch=500, total_frames=1500,
                                  auto_register_policy_transforms=True)
            batches = list(collector)
            collector.shutdown()
    assert sum(batch.numel() for batch in batches) == 1500
    assert len(env.finished) >= 1  # a whole shift was played, and the next one begun
    assert illegal_so_far(env) == 0  # the env's own count: every action was legal
    for batch in batches:  # every action taken was in the mask it was taken under
        assert batch["action_mask"].gather(-1, batch["action"].unsqueeze(-1)).all()


def test_torchrl_env_rewards_add_up_to_each_agent_s_return():
    from csr_marl.envs.torchrl import MaskedRandomPolicy

    env = torchrl_env(seed=3)
    rollout = env.rollout(5000, MaskedRandomPolicy(seed=3), break_when_any_done=True)
    assert rollout["next", "done"][-1].item() and len(env.finished) == 1
    result = env.finished[0]
    rewards = rollout["next", "reward"].double()
    assert rewards.shape[-1] == len(env.possible_agents)
    assert rewards.sum(0)[0].item() == pytest.approx(result.team_return, abs=1e-4)  # shared mode: the team's
    # The same seed and actions through the AEC environment give each agent the same return.
    aec = csr_marl.raw_env("standard_day", overrides={"horizon_minutes": 240, "warmup_minutes": 0})
    aec.reset(seed=3)
    actions = iter(rollout["action"].tolist())
    returns = dict.fromkeys(aec.possible_agents, 0.0)
    for agent in aec.agent_iter():
        _, _, terminated, truncated, _ = aec.last()
        aec.step(None if terminated or truncated else next(actions))
        for name, reward in aec.rewards.items():
            returns[name] += reward
    assert rewards.sum(0).tolist() == pytest.approx([returns[a] for a in env.possible_agents], abs=1e-4)
    assert rollout["agent"].unique().numel() > 1  # one policy, many agents: the index says who acts


def test_torchrl_env_is_reproducible_from_its_seed():
    from csr_marl.envs.torchrl import MaskedRandomPolicy

    runs = []
    for _ in range(2):
        env = torchrl_env()
        env.set_seed(7)
        runs.append(env.rollout(300, MaskedRandomPolicy(seed=1), break_when_any_done=False))
    assert (runs[0]["observation"] == runs[1]["observation"]).all()
    assert (runs[0]["next", "reward"] == runs[1]["next", "reward"]).all()


def test_torchrl_env_refuses_layouts_it_cannot_batch():
    with pytest.raises(ValueError, match="flat observations over uniform spaces"):
        torchrl_env(flat_observations=False)


def test_a_collector_without_a_policy_samples_a_stale_mask():
    # Why MaskedRandomPolicy exists: TorchRL's Collector(policy=None) samples from a copy of the action
    # spec made when it is built (docs/envs/illegal-actions.md). If TorchRL changes that, the docs change.
    env = torchrl_env(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllegalActionWarning)
        collector = Collector(env, None, frames_per_batch=100, total_frames=200)
        list(collector)
        collector.shutdown()
    assert illegal_so_far(env) > 20
