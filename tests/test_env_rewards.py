"""Reward assignment: modes, accumulation while waiting, components that sum to the reward."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from env_helpers import SHORT, aec_turns, masked_random, random_parallel_episode
from hypothesis import given, settings
from hypothesis import strategies as st

import csr_marl
from csr_marl.config.scenario import Rewards
from csr_marl.envs.aec import ContactCenterAEC
from csr_marl.envs.rewards import RewardAccount, units
from csr_marl.sim.center import ContactCenter
from csr_marl.sim.rewards import COMPONENTS

AGENTS = ["triage_0", "resolver_0", "resolver_1"]


def _account(mode: str, share: float = 0.5) -> RewardAccount:
    return RewardAccount(Rewards(mode=mode, mixed_share=share))


@pytest.mark.parametrize(
    ("mode", "triage", "resolver"),
    [
        ("shared", 0.2 + 0.5 - 0.01, 0.2 + 0.5 - 0.01),  # everyone gets the team's total
        ("individual", 0.2 - 0.01, 0.5 - 0.01),  # own components + team-wide ones
        ("mixed", 0.25 * 0.69 + 0.75 * 0.19, 0.25 * 0.69 + 0.75 * 0.49),
    ],
)
def test_modes_split_components_between_agents(mode, triage, resolver):
    account = _account(mode, share=0.25)
    account.add([("classification", "triage_0", 0.2), ("resolution", "resolver_0", 0.5), ("waiting", None, -0.01)])
    assert account.last_step("triage_0") == pytest.approx(triage)
    assert account.last_step("resolver_0") == pytest.approx(resolver)
    other = {"shared": 0.69, "individual": -0.01, "mixed": 0.25 * 0.69 + 0.75 * -0.01}[mode]
    assert account.last_step("resolver_1") == pytest.approx(other)


entries = st.lists(
    st.tuples(
        st.sampled_from(COMPONENTS),
        st.sampled_from([None, *AGENTS]),
        st.floats(-3, 3, allow_nan=False).filter(lambda v: v != 0),
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["shared", "individual", "mixed"]),
    share=st.floats(0, 1),
    steps=st.lists(st.tuples(st.sampled_from(AGENTS), entries), min_size=1, max_size=30),
)
def test_reward_since_a_turn_is_exactly_the_sum_of_the_step_rewards(mode, share, steps):
    """PettingZoo's api_test compares accumulated step rewards with last() to the bit."""
    account = _account(mode, share)
    summed = defaultdict(float)
    for agent, booked in steps:
        account.begin_step()
        account.restart(agent)
        summed[agent] = 0.0
        account.add(booked)
        assert account.last_step_all(AGENTS) == {a: account.last_step(a) for a in AGENTS}  # parallel steps
        for a in AGENTS:
            summed[a] += account.last_step(a)
            assert math.fsum(account.last_step_components(a)) == account.last_step(a)
    for a in AGENTS:
        assert account.since_turn(a) == summed[a]
        assert math.fsum(account.since_turn_components(a)) == account.since_turn(a)


def _core_entries(env, seed: int) -> list[tuple[str, str | None, float]]:
    """Every reward entry the core booked in the env's last episode (seed ``seed``): the episode's
    answers replayed on a ``ContactCenter`` alone (an episode is a function of its seed and answers).
    AEC: one decision at a time; parallel (event-driven): every decision due at the step's minute,
    answered in the order they fell due, as the env answers them."""
    center = ContactCenter(env.scenario, seed, track_rewards=True)
    if isinstance(env, ContactCenterAEC):
        for action in env._history:
            if action is not None:  # a done agent's step answers nothing
                center.decide(action, center.next_decision())
        assert center.next_decision() is None
        return center.rewards.drain()

    def due() -> list:
        if center.next_decision() is not None:
            while center.env.peek() <= center.env.now:  # the rest of the minute's events
                center.env.step()
        return list(center.due)

    for actions in env._history:
        for decision in due():
            center.decide(actions[decision.agent], decision)
    assert not due() and center.done
    return center.rewards.drain()


def _spied_episode(mode: str, seed: int = 3, share: float = 0.5):
    """A random AEC episode; returns (reward per agent over the episode, the core's entries, env)."""
    env = csr_marl.raw_env("standard_day", overrides={**SHORT, "rewards.mode": mode, "rewards.mixed_share": share})
    env.reset(seed=seed)
    policy = masked_random(seed)
    totals = defaultdict(float)
    for agent, _, reward, _, _ in aec_turns(env, lambda a, mask: policy(mask)):
        totals[agent] += reward  # what accrued since the agent's last turn
    return totals, _core_entries(env, seed), env


def test_shared_mode_gives_every_agent_the_team_return():
    totals, _, env = _spied_episode("shared")
    team = env.center.result().team_return
    for agent in env.possible_agents:
        assert totals[agent] == pytest.approx(team, abs=1e-6)


@pytest.mark.parametrize("share", [0.0, 0.3])
def test_individual_and_mixed_modes_follow_attribution(share):
    mode = "individual" if share == 0.0 else "mixed"
    totals, booked, env = _spied_episode(mode, share=share)
    team = sum(v for _, _, v in booked)
    assert team == pytest.approx(env.center.result().team_return, abs=1e-9)
    for agent in env.possible_agents:
        own = sum(v for _, who, v in booked if who == agent)
        team_wide = sum(v for _, who, v in booked if who is None)
        expected = share * team + (1 - share) * (own + team_wide)
        assert totals[agent] == pytest.approx(expected, abs=1e-6), agent
    assert any(who == "triage_0" for _, who, _ in booked)  # attribution reached the triage agent


def test_parallel_rewards_are_what_accrued_in_each_epoch():
    env = csr_marl.parallel_env("standard_day", overrides={**SHORT, "rewards.mode": "individual"})
    totals = defaultdict(float)
    for _, _, rewards, infos in random_parallel_episode(env, seed=8):
        for agent, reward in rewards.items():
            assert math.fsum(infos[agent]["reward_components"]) == reward
            totals[agent] += reward
    booked = _core_entries(env, seed=8)
    team_wide = sum(v for _, who, v in booked if who is None)
    assert team_wide < 0  # waiting and abandonment reached everyone
    for agent in env.possible_agents:
        own = sum(v for _, who, v in booked if who == agent)
        assert totals[agent] == pytest.approx(own + team_wide, abs=1e-6), agent
    assert sum(v for _, _, v in booked) == pytest.approx(env.center.result().team_return, abs=1e-9)


def test_rewards_accrued_before_the_first_decision_reach_the_first_step():
    late_shift = {
        "staffing": {"triage": 0, "resolver": 0, "escalation": 0, "shifts": [{"at_minute": 10, "resolver": 2}]},
        "customers.patience": None,
        "horizon_minutes": 60,
    }
    env = csr_marl.raw_env("standard_day", overrides=late_shift)
    env.reset(seed=0)
    assert env.center.now >= 10  # tickets waited for the shift to start
    assert all(r == 0 for r in env.rewards.values()) and all(r == 0 for r in env._cumulative_rewards.values())
    env.step(int(env.pending_decision.legal[0]))
    waiting = dict(zip(csr_marl.envs.REWARD_COMPONENTS, env.infos["resolver_1"]["reward_components"]))["waiting"]
    assert waiting < 0 and env.rewards["resolver_1"] == env._cumulative_rewards["resolver_1"] < 0


@settings(max_examples=500, deadline=None)
@given(st.floats(-2.0**60, 2.0**60, allow_nan=False) | st.integers(-2**40, 2**40).map(lambda n: n / 2))
def test_units_rounds_as_round_does(x):
    """The account's fixed-point rounding is Python's round() (ties to even), without the call."""
    assert units(x) == round(x)


@pytest.mark.parametrize("x", [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994,
                               -2.0**-60, 2.0**52 + 1, -(2.0**53), 4503599627370495.5, -4503599627370495.5, 0.0, -0.0])
def test_units_at_ties_and_edges(x):
    assert units(x) == round(x)
