"""``env()``'s one checking layer behaves as PettingZoo's OrderEnforcingWrapper(AssertOutOfBoundsWrapper(...))."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

import csr_marl
from csr_marl.envs import CheckedAEC

SHORT = {"horizon_minutes": 20}


def pettingzoo_pair():
    return OrderEnforcingWrapper(AssertOutOfBoundsWrapper(csr_marl.raw_env("standard_day", overrides=SHORT)))


def checked():
    return csr_marl.env("standard_day", overrides=SHORT)


def outcome(call):
    """What a call did: its value's type, or the exception's type and message."""
    try:
        return ("ok", type(call()).__name__)
    except Exception as error:  # noqa: BLE001 - compared between the two wrappers
        return (type(error).__name__, str(error))


def test_env_is_an_order_enforcing_wrapper_over_the_raw_env() -> None:
    env = checked()
    assert isinstance(env, CheckedAEC) and isinstance(env, OrderEnforcingWrapper)
    assert isinstance(env.unwrapped, csr_marl.envs.ContactCenterAEC)


@pytest.mark.parametrize(
    "use",
    [
        lambda e: e.agents,
        lambda e: e.agent_selection,
        lambda e: e.rewards,
        lambda e: e.infos,
        lambda e: e.num_agents,
        lambda e: e.last(),
        lambda e: e.step(0),
        lambda e: e.observe("triage_0"),
        lambda e: e.state(),
        lambda e: e.agent_iter(),
        lambda e: e.possible_agents,
    ],
)
def test_before_reset_the_same_errors(use) -> None:
    assert outcome(lambda: use(checked())) == outcome(lambda: use(pettingzoo_pair()))


@pytest.mark.parametrize("action", [33, -1, 40, np.int64(33), np.int64(3), np.array(3), True, 2.0, "1", None])
def test_out_of_bounds_and_odd_actions_the_same_errors(action) -> None:
    results = []
    for env in (checked(), pettingzoo_pair()):
        env.reset(seed=0)
        results.append(outcome(lambda env=env: env.step(action)))
    assert results[0] == results[1]


def test_a_whole_episode_the_same_and_the_step_after_the_end_warns(caplog) -> None:
    runs = []
    for env in (checked(), pettingzoo_pair()):
        env.reset(seed=1)
        rng = np.random.default_rng(1)
        seen = []
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            seen.append((agent, observation.tobytes(), reward, terminated, truncated, info["sim_time"]))
            env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(info["action_mask"]))))
        caplog.clear()
        env.step(None)  # PettingZoo's EnvLogger warns through logging
        seen.append([record.getMessage() for record in caplog.records])
        runs.append(seen)
    assert runs[0] == runs[1]
    assert "step() called after all agents are terminated or truncated" in runs[0][-1][0]


def test_the_loop_must_step_between_iterations() -> None:
    for env in (checked(), pettingzoo_pair()):
        env.reset(seed=0)
        iterator = iter(env.agent_iter())
        next(iterator)
        with pytest.raises(AssertionError, match="need to call step"):
            next(iterator)
