"""The parallel environment: one decision per epoch, no-ops for everyone else, the same core."""

from __future__ import annotations

import numpy as np
import pytest
from env_helpers import SHORT, masked_random, random_parallel_episode

import csr_marl
from csr_marl.policies import HeuristicPolicy
from csr_marl.sim import IllegalActionError


def test_each_epoch_has_one_decision_and_no_ops_for_everyone_else():
    env = csr_marl.parallel_env("standard_day", overrides=SHORT)
    observations, infos = env.reset(seed=1)
    policy = masked_random(1)
    while env.agents:
        deciding = [a for a, obs in observations.items() if not obs["action_mask"][-1]]
        assert deciding == [env.pending_decision.agent]
        for agent, obs in observations.items():
            mask = obs["action_mask"]
            assert np.array_equal(infos[agent]["action_mask"], mask)
            if agent != deciding[0]:
                assert mask.sum() == 1 and mask[-1] == 1
            else:
                assert np.flatnonzero(mask).tolist() == sorted(env.pending_decision.legal)
        actions = {a: policy(obs["action_mask"]) for a, obs in observations.items()}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        assert set(observations) == set(rewards) == set(truncations) == set(env.possible_agents)
    assert all(truncations.values()) and not any(terminations.values())


def test_same_seed_same_epochs():
    def run(seed):
        env = csr_marl.parallel_env("tasks/queue5")
        return [
            (actions, {a: obs["observation"].tobytes() for a, obs in observations.items()}, rewards)
            for actions, observations, rewards, _ in random_parallel_episode(env, seed)
        ]

    assert run(2) == run(2)
    assert run(2) != run(3)


def test_a_waiting_agent_may_only_take_the_no_op():
    env = csr_marl.parallel_env("standard_day", overrides=SHORT)
    env.reset(seed=0)
    acting = env.pending_decision.agent
    legal = env.pending_decision.legal[0]
    waiting = next(a for a in env.agents if a != acting)
    actions = {a: env.action_space(a).n - 1 for a in env.agents}
    actions[acting] = legal
    with pytest.raises(IllegalActionError, match=f"{waiting} has nothing to decide"):
        env.step({**actions, waiting: 0})
    with pytest.raises(ValueError, match=f"no action for {acting}"):
        env.step({a: v for a, v in actions.items() if a != acting})
    with pytest.raises(ValueError, match="unknown agent"):
        env.step({**actions, "manager_0": 0})
    env.step(actions)  # nothing was applied by the refused steps


def test_heuristic_through_the_parallel_env_gives_the_same_kpis_as_simulate():
    scn = csr_marl.load_scenario("standard_day", overrides={"horizon_minutes": 90})
    env = csr_marl.parallel_env(scn)
    env.reset(seed=4)
    policy = HeuristicPolicy(scn, env.center.streams["policy"])
    while env.agents:
        actions = {a: env.action_space(a).n - 1 for a in env.agents}
        actions[env.pending_decision.agent] = policy(env.pending_decision)
        env.step(actions)
    assert env.center.result().flow == csr_marl.simulate(scn, policy="heuristic", seed=4).flow


def test_max_tickets_ends_with_terminations_in_the_parallel_api():
    env = csr_marl.parallel_env("tasks/queue5")
    env.reset(seed=0)
    policy = HeuristicPolicy(env.scenario)
    while env.agents:
        actions = {a: env.action_space(a).n - 1 for a in env.agents}
        actions[env.pending_decision.agent] = policy(env.pending_decision)
        _, _, terminations, truncations, _ = env.step(actions)
    assert all(terminations.values()) and not any(truncations.values())
