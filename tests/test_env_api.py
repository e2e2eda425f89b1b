"""The environments against PettingZoo's own test suite, and the factories' contract."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from env_helpers import SHORT
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test
from pettingzoo.test.state_test import state_test

import csr_marl
from csr_marl.envs import ContactCenterAEC, ContactCenterParallel

SCENARIOS = ["standard_day", "tasks/classify", "tasks/resolve", "tasks/queue5", "night_shift", "validation/two_tier"]
# PettingZoo's seed, parallel-seed and state tests sample actions without the mask: with an
# illegal-action penalty set, those cost the penalty instead of raising.
PENALISED = {**SHORT, "rewards.illegal_action": -0.1}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice about Dict observation spaces
        yield


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pettingzoo_api_test(scenario):
    api_test(csr_marl.env(scenario, overrides=SHORT), num_cycles=100)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pettingzoo_parallel_api_test(scenario):
    parallel_api_test(csr_marl.parallel_env(scenario, overrides=SHORT), num_cycles=200)


@pytest.mark.parametrize("scenario", ["standard_day", "tasks/queue5"])
def test_pettingzoo_seed_tests(scenario):
    seed_test(lambda: csr_marl.env(scenario, overrides=SHORT), num_cycles=20)
    parallel_seed_test(lambda: csr_marl.parallel_env(scenario, overrides=PENALISED), num_cycles=20)


def test_pettingzoo_render_and_state_tests():
    render_test(lambda render_mode=None: csr_marl.env("standard_day", overrides=SHORT, render_mode=render_mode))
    state_test(csr_marl.env("standard_day", overrides=PENALISED), csr_marl.parallel_env("standard_day", overrides=PENALISED))


def test_uniform_spaces_pass_the_api_tests_and_are_identical():
    api_test(csr_marl.env("standard_day", overrides=SHORT, uniform_spaces=True), num_cycles=100)
    parallel_api_test(csr_marl.parallel_env("standard_day", overrides=SHORT, uniform_spaces=True), num_cycles=100)
    env = csr_marl.raw_env("standard_day", uniform_spaces=True)
    first = env.possible_agents[0]
    assert all(env.observation_space(a) == env.observation_space(first) for a in env.possible_agents)
    assert all(env.action_space(a) == env.action_space(first) for a in env.possible_agents)


def test_flat_observations_pass_the_api_tests_with_the_mask_in_info():
    api_test(csr_marl.env("standard_day", overrides=SHORT, flat_observations=True), num_cycles=100)
    # parallel_api_test samples from the mask only when it is in the observation: penalise instead.
    parallel_api_test(csr_marl.parallel_env("standard_day", overrides=PENALISED, flat_observations=True), num_cycles=100)
    env = csr_marl.raw_env("standard_day", flat_observations=True)
    env.reset(seed=0)
    observation, _, _, _, info = env.last()
    assert isinstance(observation, np.ndarray) and env.observation_space(env.agent_selection).contains(observation)
    assert info["action_mask"].sum() >= 2


def test_metadata_is_versioned_and_not_parallelizable():
    for env in (csr_marl.raw_env("tasks/classify"), csr_marl.parallel_env("tasks/classify")):
        assert env.metadata["name"] == "csr_marl_v5"
        assert "ansi" in env.metadata["render_modes"]
        assert env.metadata["is_parallelizable"] is False
    assert str(csr_marl.env("tasks/classify")) == "csr_marl_v5"


def test_factories_accept_a_name_a_path_or_a_scenario_with_overrides(tmp_path):
    from csr_marl.config import scenarios_dir

    loaded = csr_marl.load_scenario("tasks/resolve")
    path = scenarios_dir() / "tasks" / "resolve.yaml"
    for source in ("tasks/resolve", "resolve", path, loaded):
        env = csr_marl.raw_env(source, overrides={"staffing.resolver": 3})
        assert isinstance(env, ContactCenterAEC)
        assert env.possible_agents == ["resolver_0", "resolver_1", "resolver_2"]
    assert csr_marl.raw_env(loaded).scenario is loaded
    assert isinstance(csr_marl.parallel_env(loaded), ContactCenterParallel)
    assert isinstance(csr_marl.env(loaded).unwrapped, ContactCenterAEC)


def test_unknown_render_mode_or_option_is_refused():
    with pytest.raises(ValueError, match="render_mode 'rgb_array'"):
        csr_marl.raw_env("tasks/classify", render_mode="rgb_array")
    with pytest.raises(TypeError):
        csr_marl.raw_env("tasks/classify", horizon=5)


def test_spaces_are_built_once():
    env = csr_marl.raw_env("standard_day")
    env.reset(seed=0)
    for agent in env.possible_agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
    assert env.observation_space("resolver_0") is not env.observation_space("resolver_1")  # own RNG each


def test_seed_argument_seeds_the_first_reset_and_later_resets_follow_it():
    assert _waiting(csr_marl.raw_env("tasks/queue5", seed=11), None) == _waiting(csr_marl.raw_env("tasks/queue5"), 11)
    first, second = csr_marl.raw_env("tasks/queue5"), csr_marl.raw_env("tasks/queue5")
    first.reset(seed=3)
    second.reset(seed=3)
    assert _waiting(first, None) == _waiting(second, None)  # seedless resets draw from the last seed
    assert _waiting(first, None) != _waiting(first, 3)


def _waiting(env, seed):
    """The first decision's ticket text after a reset."""
    env.reset(seed=seed)
    return env.pending_decision.staff.ticket.text


def test_pickling_rebuilds_the_environment_from_its_arguments():
    env = csr_marl.raw_env("tasks/queue5", seed=4, overrides={"horizon_minutes": 100})
    copy = pickle.loads(pickle.dumps(env))
    assert copy.scenario == env.scenario
    env.reset()
    copy.reset()
    np.testing.assert_array_equal(env.observe(env.agent_selection), copy.observe(copy.agent_selection))
