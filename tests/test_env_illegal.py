"""Illegal actions never pay: a random legal action replaces one, it is counted, and a mask-blind
learner is warned (``tests/test_env_illegal_warning.py``).

The replacement is a uniformly random legal action, so an always-illegal policy plays exactly the games
a random legal policy plays, and only the penalties tell them apart. The test that can see that is a
paired one: a random legal policy that draws exactly what the replacement draws (a copy of the
episode's own ``illegal_fallback`` stream, taken at reset) plays the very same game, so on every
scenario and every task each of 20 episodes (seeds 0..19) must score lower when played illegally, and
the 95 % CI of the paired difference must lie below zero. (Two independent random policies differ by
the day's noise, which under priced staff time is larger than the penalties of a short episode: their
comparison tests the noise, not the rule.) Episodes run 60 minutes without warm-up.
"""

from __future__ import annotations

import copy
import warnings

import gymnasium
import numpy as np
import pytest

import csr_marl
import csr_marl.envs
from csr_marl.analysis.stats import mean_ci
from csr_marl.config import scenario_names
from csr_marl.envs import TASKS
from csr_marl.envs.driver import IllegalActionWarning

EPISODES = 20
SHORT = {"horizon_minutes": 60, "warmup_minutes": 0}
POLICIES = ("illegal", "legal as the replacement draws")


def chooser(policy: str, seed: int, center):
    """``policy``'s action for a mask: a random forbidden one, or the random legal one the environment's
    replacement would draw (a copy of the episode's own stream, so the very same draw)."""
    if policy == "legal as the replacement draws":
        stream = copy.deepcopy(center.streams["illegal_fallback"])
        return lambda mask: int(np.flatnonzero(mask)[stream.integers(int(mask.sum()))])
    rng = np.random.default_rng(seed + 10_000)
    return lambda mask: int(rng.choice(np.flatnonzero(mask == 0)))


def aec_return(scenario: str, seed: int, policy: str) -> float:
    env = csr_marl.raw_env(scenario, overrides=SHORT)
    env.reset(seed=seed)
    choose = chooser(policy, seed, env.unwrapped.center)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else choose(info["action_mask"]))
    return env.unwrapped.center.result().team_return


def task_return(task: str, seed: int, policy: str) -> float:
    env = gymnasium.make(f"csr_marl/{task}", overrides=SHORT)
    _, info = env.reset(seed=seed)  # a task redraws an episode in which its agent never decides
    choose = chooser(policy, seed, env.unwrapped.center)
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, info = env.step(choose(info["action_mask"]))
        total += reward
        done = terminated or truncated
    return total


def returns(play, name: str) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllegalActionWarning)
        return {policy: np.array([play(name, seed, policy) for seed in range(EPISODES)]) for policy in POLICIES}


def assert_paired_below(runs: dict[str, np.ndarray]) -> None:
    """Every episode of the always-illegal policy scores below the same game played legally."""
    illegal, mirrored = runs["illegal"], runs["legal as the replacement draws"]
    assert (illegal < mirrored).all(), list(zip(illegal, mirrored))
    assert mean_ci(illegal - mirrored)[2] < 0


@pytest.mark.slow
@pytest.mark.parametrize("scenario", scenario_names())
def test_always_illegal_scores_below_the_same_game_played_legally_on_every_scenario(scenario):
    assert_paired_below(returns(aec_return, scenario))


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_always_illegal_scores_below_the_same_game_played_legally_on_every_task(task):
    assert_paired_below(returns(task_return, task))


def test_illegal_actions_are_counted_per_agent_in_info_and_in_the_kpis():
    env = csr_marl.parallel_env("standard_day", overrides={"horizon_minutes": 30})
    observations, infos = env.reset(seed=1)
    rng = np.random.default_rng(0)
    mine = dict.fromkeys(env.possible_agents, 0)
    decisions = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllegalActionWarning)
        while env.agents:
            actions = {}
            for agent, decision in env.due_decisions.items():
                illegal = agent.startswith("triage")  # triage never reads its mask
                mask = infos[agent]["action_mask"]
                actions[agent] = int(rng.choice(np.flatnonzero(mask == 0) if illegal else np.flatnonzero(mask)))
                mine[agent] += illegal
                decisions += 1
            observations, rewards, _, _, infos = env.step(actions)
            assert {a: infos[a]["illegal_actions"] for a in infos} == {a: mine[a] for a in infos}
    kpis = env.center.result().kpis
    assert kpis["illegal_actions"] == sum(mine.values()) > 0
    assert kpis["illegal_action_share"] == pytest.approx(sum(mine.values()) / decisions)
    # The built-in policies' runs carry no such KPI (no environment, no illegal action).
    assert "illegal_actions" not in csr_marl.simulate("standard_day", overrides={"horizon_minutes": 30}, seed=1).kpis


def test_the_replacement_is_a_random_legal_action_from_its_own_stream():
    # Arrivals and ticket content do not depend on what replaced an illegal action.
    env = csr_marl.raw_env("tasks/classify", overrides=SHORT)
    env.reset(seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllegalActionWarning)
        for agent in env.agent_iter():
            _, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            env.step(env.unwrapped.action_space(agent).n - 1)  # the no-op: never legal in AEC
    core = csr_marl.simulate("tasks/classify", overrides=SHORT, seed=5, policy="heuristic")
    assert env.unwrapped.center.result().kpis["offered"] == core.kpis["offered"]
    # The customer's own labels (right about three times in four) are no longer what it gets:
    # a random category is right about one time in four.
    assert env.unwrapped.center.result().kpis["triage_accuracy"] < 0.5
