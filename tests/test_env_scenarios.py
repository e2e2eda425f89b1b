"""Every shipped scenario through both APIs, and the task scenarios' own promises."""

from __future__ import annotations

import numpy as np
import pytest
from env_helpers import SHORT, aec_turns, masked_random, random_parallel_episode

import csr_marl
from csr_marl.config import scenario_names


@pytest.mark.parametrize("scenario", scenario_names())
def test_random_masked_episodes_keep_every_ticket_accounted_for(scenario):
    env = csr_marl.raw_env(scenario, overrides=SHORT)
    env.reset(seed=0)
    policy = masked_random(0)
    for turn, (_, observation, _, _, action) in enumerate(
        aec_turns(env, lambda agent, mask: policy(mask))
    ):
        if action is not None:
            assert int(action) in env.pending_decision.legal  # the mask admits only what the core accepts
            assert env.observation_space(env.agent_selection).contains(observation)
        if turn % 25 == 0:
            env.center.check_conservation()
    env.center.check_conservation()
    for _ in random_parallel_episode(csr_marl.parallel_env(scenario, overrides=SHORT), seed=0):
        pass


def test_task_scenarios_are_listed_and_use_the_default_bank():
    for task in ("classify", "resolve", "queue5"):
        assert f"tasks/{task}" in scenario_names()
        assert csr_marl.load_scenario(task).tickets.bank.endswith("tickets/default.yaml")


def test_classify_is_triage_alone():
    env = csr_marl.raw_env("tasks/classify")
    assert env.possible_agents == ["triage_0"]
    env.reset(seed=0)
    mask = env.infos["triage_0"]["action_mask"]
    assert mask[:32].reshape(-1, 2)[:, 1].sum() == 0  # nobody at the desk: the route is fixed
    assert mask[:32].sum() == 16


def test_resolve_is_one_resolver_working_tickets_with_step_rewards():
    env = csr_marl.raw_env("tasks/resolve")
    assert env.possible_agents == ["resolver_0"]
    env.reset(seed=0)
    policy = masked_random(0)
    components = dict.fromkeys(csr_marl.envs.REWARD_COMPONENTS, 0.0)
    for _, _, _, info, _ in aec_turns(env, lambda agent, mask: policy(mask)):
        for name, value in zip(csr_marl.envs.REWARD_COMPONENTS, info["reward_components"]):
            components[name] += value
    assert components["step"] != 0.0 and components["abandonment"] == 0.0


def test_queue5_is_five_tickets_at_minute_zero_that_end_the_episode():
    scn = csr_marl.load_scenario("queue5")
    assert scn.max_tickets == 5 and scn.customers.patience is None
    env = csr_marl.parallel_env(scn)
    epochs = random_parallel_episode(env, seed=1)
    assert env.center.flow["arrived"] == 5
    assert env.center.end_time < scn.horizon_minutes  # every ticket closed before the horizon
    assert len(epochs) > 5
    assert np.isfinite(sum(sum(rewards.values()) for _, _, rewards, _ in epochs))
