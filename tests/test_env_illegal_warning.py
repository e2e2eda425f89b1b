"""The illegal-action warning: per agent (a Gymnasium task's learner, not its fourteen-strong team),
at every episode's end (by itself, a reset in mid-shift, ``max_cycles``, ``max_episode_steps``,
``close()``), never for a masked policy, and naming only the routes tested to reach 0 illegal actions.
"""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest

import csr_marl
import csr_marl.envs
from csr_marl.envs.driver import ILLEGAL_WARN_MIN_DECISIONS, IllegalActionWarning

SHORT = {"horizon_minutes": 60, "warmup_minutes": 0}
DESKS = ["EscalationDesk-v4", "Resolver-v4"]  # one learner among fourteen staff


def forbidden(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask == 0)[0])


def allowed(rng: np.random.Generator):
    return lambda mask: int(rng.choice(np.flatnonzero(mask)))


def ours(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, IllegalActionWarning)]


def where(caught) -> str:
    """The file the one illegal-action warning points at."""
    [warning] = [w for w in caught if issubclass(w.category, IllegalActionWarning)]
    return warning.filename


def play_task(env, choose, steps: int | None = None, info=None) -> tuple[bool, bool]:
    """Play ``steps`` learner decisions (None: to the episode's end); (terminated, truncated)."""
    if info is None:
        _, info = env.reset(seed=0)
    taken = 0
    while steps is None or taken < steps:
        _, _, terminated, truncated, info = env.step(choose(info["action_mask"]))
        taken += 1
        if terminated or truncated:
            return terminated, truncated
    return False, False


@pytest.mark.parametrize("task", DESKS)
def test_an_always_illegal_learner_on_a_team_task_is_warned_at_the_shift_s_end(task):
    # 240 minutes: the learner decides 30-100 times, its thirteen colleagues far more.
    env = gymnasium.make(f"csr_marl/{task}", overrides={"horizon_minutes": 240, "warmup_minutes": 0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert play_task(env, forbidden) == (False, True)  # the shift ended by itself
    learner = env.unwrapped.agent
    team_share = env.unwrapped.center.result().kpis["illegal_action_share"]
    assert team_share < 0.1  # the colleagues' decisions dilute the team's share (2.5 %, 7.3 %)
    [message] = ours(caught)
    assert f"{learner} 100% (" in message
    assert where(caught) == __file__  # the learner's step, through gymnasium.make's wrappers


@pytest.mark.parametrize("task", DESKS)
def test_max_episode_steps_warns_at_the_next_reset(task):
    env = gymnasium.make(f"csr_marl/{task}", max_episode_steps=ILLEGAL_WARN_MIN_DECISIONS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert play_task(env, forbidden) == (False, True)  # TimeLimit truncated it in mid-shift
        assert not ours(caught)  # the environment cannot know yet
        env.reset(seed=1)  # ... until the next episode starts
    [message] = ours(caught)
    assert f"{env.unwrapped.agent} 100% ({ILLEGAL_WARN_MIN_DECISIONS} of {ILLEGAL_WARN_MIN_DECISIONS} decisions)" in message


def test_a_mostly_legal_learner_is_warned_above_the_threshold_only():
    def every(n: int, rng: np.random.Generator):
        legal, count = allowed(rng), iter(range(10**6))
        return lambda mask: forbidden(mask) if next(count) % n == 0 else legal(mask)

    messages = {}
    for n in (5, 50):  # 20 % and 2 % of the learner's decisions illegal
        env = gymnasium.make("csr_marl/Resolver-v4", max_episode_steps=100)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            play_task(env, every(n, np.random.default_rng(0)))
            env.close()  # closing in mid-episode judges it too
        messages[n] = ours(caught)
    assert len(messages[5]) == 1 and "resolver_0 20% (20 of 100 decisions)" in messages[5][0]
    assert messages[50] == []


def test_short_episodes_are_pooled_until_the_learner_has_enough_decisions():
    env = gymnasium.make("csr_marl/EscalationDesk-v4", max_episode_steps=5)
    warned_at = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for episode in range(8):
            _, info = env.reset(seed=episode)
            play_task(env, forbidden, info=info)
            if ours(caught) and warned_at is None:
                warned_at = episode
    # Episode k's five decisions are judged at the reset that starts episode k + 1: the 20th
    # decision (episode 3's last) is judged when episode 4 starts.
    assert warned_at == ILLEGAL_WARN_MIN_DECISIONS // 5
    assert len(ours(caught)) == 1  # each agent once per environment


def test_a_reset_in_mid_shift_warns_naming_the_agents():
    env = csr_marl.env("standard_day")
    env.reset(seed=0)
    legal = allowed(np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(300):  # the shift is far from over
            _, _, _, _, info = env.last()
            choose = forbidden if env.agent_selection.startswith("triage") else legal  # triage ignores its mask
            env.step(choose(info["action_mask"]))
        assert not ours(caught)
        decisions = dict(env.unwrapped._driver.decisions)
        env.reset(seed=1)
    [message] = ours(caught)
    judged = [a for a, n in decisions.items() if a.startswith("triage") and n >= ILLEGAL_WARN_MIN_DECISIONS]
    assert judged  # the triage agents took many decisions each
    for agent in judged:
        assert f"{agent} 100% ({decisions[agent]} of {decisions[agent]} decisions)" in message
    assert "resolver" not in message and "escalation" not in message  # legal agents are not named


def test_max_cycles_warns_at_the_truncating_step():
    env = csr_marl.parallel_env("tasks/classify", max_cycles=30)
    _, infos = env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while env.agents:
            assert not ours(caught)
            actions = {a: forbidden(infos[a]["action_mask"]) for a in env.due_decisions}
            _, _, _, truncations, infos = env.step(actions)
    assert all(truncations.values()) and env.unwrapped._driver.epochs == 30
    [message] = ours(caught)
    assert "triage_0 100% (" in message
    assert where(caught) == __file__  # the caller's env.step line, not the environment's own code


def test_a_mask_blind_policy_is_warned_once_per_agent_naming_only_tested_routes():
    env = csr_marl.env("tasks/classify", overrides=SHORT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for episode in range(2):
            env.reset(seed=episode)
            for agent in env.agent_iter():
                _, _, terminated, truncated, info = env.last()
                env.step(None if terminated or truncated else forbidden(info["action_mask"]))
    [message] = ours(caught)
    for route in (
        "MaskablePPO", "action_masks()", "csr_marl.envs.rllib.RLlibEnv with mask_in_observation=True",
        "ActionMaskingTorchRLModule", "csr_marl.train.TianshouEnv", "csr_marl.envs.torchrl.TorchRLEnv",
    ):
        assert route in message
    assert "flat_observations=False" not in message and "PettingZooWrapper" not in message
    assert where(caught) == __file__  # the user's env.step, through env()'s checks and PettingZoo's wrappers


def test_masked_policies_are_never_warned_at_any_episode_end():
    rng = np.random.default_rng(0)
    legal = allowed(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllegalActionWarning)
        env = csr_marl.env("tasks/classify", overrides=SHORT)
        env.reset(seed=0)
        for agent in env.agent_iter():  # the shift's own end
            _, _, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else legal(info["action_mask"]))
        for task in DESKS:  # max_episode_steps, then a reset
            task_env = gymnasium.make(f"csr_marl/{task}", max_episode_steps=2 * ILLEGAL_WARN_MIN_DECISIONS)
            play_task(task_env, legal)
            task_env.reset(seed=1)
            task_env.close()
        parallel = csr_marl.parallel_env("standard_day", max_cycles=200)  # max_cycles
        _, infos = parallel.reset(seed=0)
        while parallel.agents:
            _, _, _, _, infos = parallel.step({a: legal(infos[a]["action_mask"]) for a in parallel.due_decisions})
        parallel.reset(seed=1)
