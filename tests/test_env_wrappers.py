"""Wrappers that write into rewards / cumulative rewards / infos work, and never touch the core's books."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.utils.wrappers import TerminateIllegalWrapper

from extras import need

import csr_marl

SHORT = {"horizon_minutes": 60}


def play(env, seed: int, *, illegal_at: int | None = None) -> list[float]:
    """A masked random team (one illegal move at turn ``illegal_at``); the rewards ``last()`` gave."""
    rng = np.random.default_rng(seed)
    seen = []
    for turn, agent in enumerate(env.agent_iter()):
        _, reward, terminated, truncated, info = env.last()
        seen.append(reward)
        if terminated or truncated:
            env.step(None)
            continue
        mask = np.asarray(info["action_mask"])
        legal = np.flatnonzero(mask)
        action = int(np.flatnonzero(mask == 0)[0]) if turn == illegal_at else int(rng.choice(legal))
        env.step(action)
    return seen


def test_views_behave_like_dicts_for_writers() -> None:
    env = csr_marl.raw_env("tasks/classify", overrides=SHORT)
    env.reset(seed=0)
    agent = env.agent_selection
    legal = int(np.flatnonzero(env.infos[agent]["action_mask"])[0])
    env._cumulative_rewards[agent] += 5.0
    assert env.last()[1] == pytest.approx(5.0)
    env.rewards.update({agent: 2.0})
    assert env.rewards[agent] == 2.0 and dict(env.rewards)[agent] == 2.0
    env.infos[agent] = {"note": 1}
    assert env.infos[agent] == {"note": 1}
    env.step(legal)
    # The environment moved on: values come from the simulation again.
    assert "action_mask" in env.infos[env.agent_selection]


def test_a_views_bulk_read_is_the_agent_by_agent_read() -> None:
    """``get_many`` (Tianshou's per-step reward vector) reads what ``get`` reads, writes included."""
    env = csr_marl.raw_env("standard_day", overrides={**SHORT, "rewards.mode": "individual"})
    env.reset(seed=3)
    names = [*env.possible_agents, "nobody"]
    rng = np.random.default_rng(3)
    differing = 0
    for _ in env.agent_iter(200):
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if not env.agents:
            break
        one_by_one = [env.rewards.get(name, -9.0) for name in names]
        assert env.rewards.get_many(names, -9.0) == one_by_one
        differing += len(set(one_by_one[:-1])) > 1  # individual rewards: agents' values differ
    assert differing > 0
    env.reset(seed=4)
    env.rewards[env.possible_agents[0]] = 7.0  # a wrapper writes
    assert env.rewards.get_many(names[:2], 0.0) == [7.0, env.rewards[names[1]]]


def test_terminate_illegal_wrapper_ends_the_episode_and_leaves_the_books_alone() -> None:
    plain = csr_marl.raw_env("tasks/classify", overrides=SHORT)
    plain.reset(seed=3)
    play(plain, 1, illegal_at=None)
    wrapped = TerminateIllegalWrapper(csr_marl.raw_env("tasks/classify", overrides=SHORT), illegal_reward=-1)
    wrapped.reset(seed=3)
    seen = play(wrapped, 1, illegal_at=7)
    assert -1.0 in seen and len(seen) < 12  # ended at the illegal move, with its penalty
    core = wrapped.unwrapped.center
    assert "illegal_action" not in {k for k, v in core.rewards.totals.items() if v}


def test_supersuit_reward_wrappers_transform_what_agents_see_not_the_team_return() -> None:
    supersuit = need("supersuit")
    plain = csr_marl.raw_env("tasks/classify", overrides=SHORT)
    plain.reset(seed=5)
    raw = play(plain, 2)
    for wrap in (
        lambda e: supersuit.clip_reward_v0(e, lower_bound=-0.1, upper_bound=0.1),
        lambda e: supersuit.reward_lambda_v0(e, lambda r: 10 * r),
    ):
        env = wrap(csr_marl.raw_env("tasks/classify", overrides=SHORT))
        env.reset(seed=5)
        seen = play(env, 2)
        assert len(seen) == len(raw)
        assert env.unwrapped.center.result().team_return == plain.center.result().team_return
    clipped = supersuit.clip_reward_v0(csr_marl.raw_env("tasks/classify", overrides=SHORT), lower_bound=-0.1, upper_bound=0.1)
    clipped.reset(seed=5)
    assert max(abs(r) for r in play(clipped, 2)) <= 0.1 + 1e-12
