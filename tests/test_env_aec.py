"""The AEC environment: agents and turns, episode end, illegal actions, determinism, built-in policies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from env_helpers import SHORT, aec_turns, masked_random, random_aec_episode

import csr_marl
from csr_marl.policies import HeuristicPolicy
from csr_marl.sim import IllegalActionError


def test_one_agent_per_staff_slot_at_peak_and_roles_without_headcount_do_not_exist():
    assert csr_marl.raw_env("standard_day").possible_agents == [
        "triage_0", "triage_1", *(f"resolver_{i}" for i in range(10)), "escalation_0", "escalation_1",
    ]
    surge = csr_marl.raw_env("surge")  # 10 resolvers, 16 at the peak of the shift schedule
    assert [a for a in surge.possible_agents if a.startswith("resolver")] == [f"resolver_{i}" for i in range(16)]
    assert csr_marl.raw_env("night_shift").possible_agents == ["resolver_0", "resolver_1", "resolver_2"]


def test_the_agent_whose_decision_is_due_acts_and_only_real_choices_are_asked():
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=1)
    policy = masked_random(1)
    agents = env.agents.copy()
    for agent, observation, _, info, action in aec_turns(env, lambda a, mask: policy(mask)):
        assert env.agents == agents or action is None  # the list never changes until the end
        if action is None:
            continue
        decision = env.pending_decision
        assert decision.agent == agent
        mask = info["action_mask"]
        assert np.flatnonzero(mask).tolist() == sorted(decision.legal)  # no action the core would refuse
        assert mask.sum() >= 2  # a single legal action is taken by the core, nobody is asked
        assert mask[-1] == 0  # the no-op is for the parallel API only
        assert info["decision_due"]
        assert info["sim_time"] == decision.time
        waiting = [a for a in env.agents if a != agent]
        assert not env.infos[waiting[0]]["action_mask"].any() and not env.infos[waiting[0]]["decision_due"]


def test_at_the_horizon_every_agent_is_truncated_at_once_and_steps_once_with_none():
    env = csr_marl.env("standard_day", overrides=SHORT)
    turns = random_aec_episode(env, seed=2)
    dead = [t for t in turns if t[4] is None]
    assert sorted(t[0] for t in dead) == sorted(env.possible_agents)  # each exactly once, at the end
    assert all(t[4] is None for t in turns[-len(dead):])
    assert env.unwrapped.center.end_time == 60
    assert env.agents == []
    assert env.unwrapped.pending_decision is None


def test_truncation_flags_are_set_for_everyone_together():
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=2)
    policy = masked_random(2)
    while not any(env.truncations.values()):
        assert not any(env.terminations.values())
        env.step(policy(env.infos[env.agent_selection]["action_mask"]))
    assert all(env.truncations.values()) and len(env.truncations) == len(env.possible_agents)
    assert not any(env.terminations.values())
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(0)


def test_max_tickets_ends_the_episode_early_with_terminations():
    env = csr_marl.raw_env("tasks/queue5")
    env.reset(seed=0)
    policy = HeuristicPolicy(env.scenario)
    while not (any(env.terminations.values()) or any(env.truncations.values())):
        env.step(policy(env.pending_decision))
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.center.end_time < env.scenario.horizon_minutes
    assert env.center.flow["arrived"] == 5 and env.center.open_tickets == 0


def test_in_strict_mode_an_illegal_action_raises_a_clear_error_and_changes_nothing():
    env = csr_marl.raw_env("standard_day", overrides=SHORT, strict=True)
    env.reset(seed=0)
    agent, decision = env.agent_selection, env.pending_decision
    mask = env.infos[agent]["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(IllegalActionError, match=rf"{agent} \(.*\): action {illegal} .*legal actions"):
        env.step(illegal)
    with pytest.raises(IllegalActionError, match="no-op"):
        env.step(len(mask) - 1)
    with pytest.raises(IllegalActionError, match="outside the action space"):
        env.step(len(mask) + 3)
    assert env.agent_selection == agent and env.pending_decision is decision
    env.step(int(np.flatnonzero(mask)[0]))  # the episode goes on


@pytest.mark.parametrize("phase", ["triage", "pick", "work"])
def test_by_default_an_illegal_action_costs_the_penalty_and_takes_a_random_legal_action(phase):
    overrides = {**SHORT, "rewards.illegal_action": -0.25, "rewards.mode": "individual"}
    env, twin = (csr_marl.raw_env("standard_day", overrides=overrides) for _ in range(2))
    env.reset(seed=0)
    twin.reset(seed=0)
    policy = masked_random(0)
    while env.pending_decision.phase.value != phase:
        action = policy(env.infos[env.agent_selection]["action_mask"])
        env.step(action)
        twin.step(action)
    agent, decision = env.agent_selection, env.pending_decision
    noop = env.action_space(agent).n - 1
    env.step(noop)  # masked: illegal
    # The replacement: a uniformly random legal action from the illegal_fallback stream (drawn here
    # from the twin's stream, in the same state), for free when chosen legally.
    replacement = twin._driver.fallback(twin.pending_decision)
    assert replacement in decision.legal
    twin.step(replacement)
    assert env.pending_decision is not decision
    assert env.center.rewards.totals["illegal_action"] == -0.25
    assert twin.center.rewards.totals["illegal_action"] == 0.0
    # The same episode goes on; the acting agent alone paid.
    assert env.center.flow == twin.center.flow and env.agent_selection == twin.agent_selection
    assert env._cumulative_rewards[agent] == pytest.approx(twin._cumulative_rewards[agent] - 0.25)


def test_same_seed_same_episode_different_seed_different_episode():
    def run(seed):
        turns = random_aec_episode(csr_marl.env("standard_day", overrides=SHORT), seed)
        return [(a, obs.tobytes(), r, action) for a, obs, r, _, action in turns]

    first = run(5)
    assert first == run(5)
    assert first != run(6)


@pytest.mark.parametrize("scenario", ["standard_day", "tasks/queue5", "night_shift", "tasks/classify"])
def test_heuristic_through_the_env_gives_the_same_kpis_as_simulate(scenario):
    scn = csr_marl.load_scenario(scenario, overrides={"horizon_minutes": 120})
    env = csr_marl.env(scn)
    env.reset(seed=9)
    raw = env.unwrapped
    policy = HeuristicPolicy(scn, raw.center.streams["policy"])
    for _ in aec_turns(env, lambda agent, obs: policy(raw.pending_decision)):
        pass
    through_env = raw.center.result()
    direct = csr_marl.simulate(scn, policy="heuristic", seed=9)
    assert through_env.flow == direct.flow
    # The environment's episodes also count illegal actions (none here); the core's runs have no such KPI.
    assert through_env.kpis.keys() - direct.kpis.keys() == {"illegal_actions", "illegal_action_share"}
    assert through_env.kpis["illegal_actions"] == 0 == through_env.kpis["illegal_action_share"]
    for name, value in direct.kpis.items():
        assert value == through_env.kpis[name] or (math.isnan(value) and math.isnan(through_env.kpis[name])), name
    assert through_env.team_return == pytest.approx(direct.team_return)


def test_info_carries_sim_time_and_the_time_since_the_agents_last_decision():
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=4)
    policy = masked_random(4)
    last_decision: dict[str, float] = {}
    for agent, _observation, reward, info, action in aec_turns(env, lambda a, mask: policy(mask)):
        if action is None:
            continue
        now = env.pending_decision.time
        assert info["sim_time"] == now
        assert info["time_since_last_decision"] == pytest.approx(now - last_decision.get(agent, 0.0))
        assert math.fsum(info["reward_components"]) == reward
        last_decision[agent] = now


def test_an_info_is_one_dict_within_a_step_and_a_new_one_after_it():
    # Wrappers read env.infos[agent] more than once a step and may write into it: within a step every
    # read returns the same dict (last() too); after a step
    # the info is built anew, so a write never reaches a later step. The driver keeps only what was
    # built since the core last moved: what a step replaced is freed then, not when its agent next acts.
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=3)
    policy = masked_random(3)
    driver = env.unwrapped._driver
    for _ in range(60):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        info = env.infos[agent]
        assert env.infos[agent] is info and env.last()[4] is info
        everyone = [env.infos[other] for other in env.agents]  # as a wrapper reading every agent's
        assert everyone[env.agents.index(agent)] is info
        action = policy(info["action_mask"])
        info["written"] = True
        env.step(action)
        after = env.infos[agent]
        assert after is not info and "written" not in after
        assert list(driver._infos) == [agent]  # not the dozen read before the step
    else:
        return
    pytest.fail("the episode ended within 60 decisions")
