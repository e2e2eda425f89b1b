"""Misusing the environments gives a clear error, never a KeyError/TypeError or a silent truncation."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import csr_marl


def random_steps(env, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(n):
        info = env.infos[env.agent_selection]
        env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))


def finish(env, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(info["action_mask"]))))
    return env.unwrapped.center.result().kpis


def test_step_before_reset_and_after_the_end_say_so() -> None:
    env = csr_marl.raw_env("tasks/classify")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset(seed=0)
    finish(env, 0)
    with pytest.raises(RuntimeError, match="episode has ended"):
        env.step(0)


@pytest.mark.parametrize("action", [5.7, "5", None, 5.0, True])
def test_non_integer_actions_are_refused_not_truncated(action: object) -> None:
    env = csr_marl.raw_env("tasks/classify")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="triage_0"):
        env.step(action)
    par = csr_marl.parallel_env("tasks/classify")
    observations, _ = par.reset(seed=0)
    with pytest.raises(ValueError, match="triage_0"):
        par.step({agent: action for agent in par.agents})


def test_numpy_integer_actions_are_accepted() -> None:
    env = csr_marl.raw_env("tasks/classify")
    env.reset(seed=0)
    legal = np.flatnonzero(env.infos["triage_0"]["action_mask"])
    env.step(np.int64(legal[0]))
    env.step(np.array([legal[0]]))


def test_parallel_episode_without_any_decision_ends_at_reset() -> None:
    """The README loop crashed: reset() left agents non-empty and step() raised."""
    env = csr_marl.parallel_env("validation/mmc", overrides={
        "staffing.resolver": 1, "arrivals.rate_per_hour": 1, "horizon_minutes": 1, "warmup_minutes": 0,
    })
    observations, infos = env.reset(seed=0)
    assert env.agents == [] and observations == {} and infos == {}
    with pytest.raises(RuntimeError, match="episode has ended"):
        env.step({})


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "wrapped deepcopy"])
def test_a_copy_of_a_live_env_is_the_same_episode(how: str) -> None:
    env = csr_marl.env("standard_day", seed=0) if how == "wrapped deepcopy" else csr_marl.raw_env("standard_day")
    env.reset(seed=4)
    random_steps(env, 60)
    clone = copy.deepcopy(env) if how != "pickle" else pickle.loads(pickle.dumps(env))
    assert clone.agent_selection == env.agent_selection
    assert clone.unwrapped.center.now == env.unwrapped.center.now
    a, b = env.observe(env.agent_selection), clone.observe(clone.agent_selection)
    assert np.array_equal(a, b)
    assert finish(env, 9) == finish(clone, 9)


def test_a_copy_keeps_the_seed_sequence_of_later_resets() -> None:
    env = csr_marl.raw_env("tasks/classify", seed=1)
    env.reset()
    env.reset()
    random_steps(env, 3)
    clone = copy.deepcopy(env)
    env.reset()
    clone.reset()
    assert env.unwrapped._driver.episode_seed == clone.unwrapped._driver.episode_seed


def test_observations_stay_inside_their_box() -> None:
    env = csr_marl.raw_env("standard_day")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(400):
        agent = env.agent_selection
        observation = env.observe(agent)
        assert env.observation_space(agent).contains(observation)
        env.step(int(rng.choice(np.flatnonzero(env.infos[agent]["action_mask"]))))
