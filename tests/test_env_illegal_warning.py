"""The illegal-action warning: per agent (a Gymnasium task's learner, not its fourteen-strong team),
while it plays (at the illegal action that settles it: in a long episode, a short one, over short
episodes, inside SuperSuit + Stable-Baselines3's learn()), by a binomial test against a stated rate
with rare false alarms, never for a masked policy, and naming only the routes tested to reach 0
illegal actions.
"""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest

import csr_marl
import csr_marl.envs
from extras import need
from csr_marl.envs.driver import IllegalActionWarning
from csr_marl.envs.illegal_warning import (
    ILLEGAL_WARN_LEVEL,
    ILLEGAL_WARN_SHARE,
    ILLEGAL_WARN_WINDOW,
    binomial_tail,
    illegal_beyond_rate,
)

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
def test_an_always_illegal_learner_on_a_team_task_is_warned_at_its_third_decision(task):
    # 240 minutes: the learner decides 30-100 times, its thirteen colleagues far more.
    env = gymnasium.make(f"csr_marl/{task}", overrides={"horizon_minutes": 240, "warmup_minutes": 0})
    _, info = env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for decision in range(3):
            # two illegal actions in a row happen by chance at a 5 % rate; the third settles it
            assert not ours(caught)
            _, _, terminated, truncated, info = env.step(forbidden(info["action_mask"]))
        [message] = ours(caught)  # in mid-shift
        assert play_task(env, forbidden, info=info) == (False, True)  # on to the shift's end
    learner = env.unwrapped.agent
    team_share = env.unwrapped.center.result().kpis["illegal_action_share"]
    assert team_share < 0.1  # the colleagues' decisions dilute the team's share (2.5 %, 7.3 %)
    assert f"{learner} 100% (3 of 3 decisions)" in message
    assert len(ours(caught)) == 1  # once per environment
    assert where(caught) == __file__  # the learner's step, through gymnasium.make's wrappers


@pytest.mark.parametrize("api", ["aec", "parallel"])
def test_a_short_episode_that_is_mostly_illegal_warns_before_it_ends(api):
    """60 cycles of standard_day, four actions in five illegal: each agent decides a few times only."""
    rng = np.random.default_rng(0)
    legal = allowed(rng)

    def mostly_illegal(mask: np.ndarray) -> int:
        return legal(mask) if rng.random() < 0.2 else forbidden(mask)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if api == "aec":
            env = csr_marl.env("standard_day", max_cycles=60)
            env.reset(seed=0)
            for agent in env.agent_iter():
                _, _, terminated, truncated, info = env.last()
                env.step(None if terminated or truncated else mostly_illegal(info["action_mask"]))
        else:
            env = csr_marl.parallel_env("standard_day", max_cycles=60)
            _, infos = env.reset(seed=0)
            while env.agents:
                _, _, _, _, infos = env.step({a: mostly_illegal(infos[a]["action_mask"]) for a in env.due_decisions})
        decisions = env.unwrapped._driver.decisions
        assert max(decisions.values()) < 20  # no agent had the 20 decisions a warning once waited for
    [message] = ours(caught)
    assert message.startswith("illegal actions: ") and "% (" in message
    assert where(caught) == __file__


def test_a_long_episode_warns_while_it_runs():
    """A whole standard_day shift, never ended: the warning comes at the step that settles it, as a
    training loop that never finishes an episode steps on."""
    env = csr_marl.parallel_env("standard_day")
    _, infos = env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(200):
            _, _, _, _, infos = env.step({a: forbidden(infos[a]["action_mask"]) for a in env.due_decisions})
            if ours(caught):
                break
    assert ours(caught) and env.agents  # warned in mid-shift, at an early step
    assert "100% (3 of 3 decisions)" in ours(caught)[0]


def test_counts_carry_over_short_episodes():
    env = gymnasium.make("csr_marl/EscalationDesk-v4", max_episode_steps=1)  # one decision per episode
    warned_at = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for episode in range(6):
            _, info = env.reset(seed=episode)
            play_task(env, forbidden, info=info)
            if ours(caught) and warned_at is None:
                warned_at = episode
    assert warned_at == 2  # the third episode's one illegal decision settles it
    assert "escalation_0 100% (3 of 3 decisions)" in ours(caught)[0] and len(ours(caught)) == 1


def test_a_mostly_legal_learner_is_warned_above_the_rate_only():
    def every(n: int, rng: np.random.Generator):
        legal, count = allowed(rng), iter(range(10**6))
        return lambda mask: forbidden(mask) if next(count) % n == 0 else legal(mask)

    messages = {}
    for n in (5, 50):  # 20 % and 2 % of the learner's decisions illegal
        env = gymnasium.make("csr_marl/Resolver-v4", max_episode_steps=300)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            play_task(env, every(n, np.random.default_rng(0)))
            env.close()
        messages[n] = ours(caught)
    [message] = messages[5]
    assert "resolver_0 2" in message  # 20-some per cent, named before its hundredth decision
    assert messages[50] == []


def test_the_rule_tests_against_a_stated_rate_with_rare_false_alarms():
    """The rule's chances, exact: k illegal of n decisions warn when a policy illegal on 5 % of its
    decisions would play k or more with a chance below 0.1 %, looked at after each illegal action and
    cleared every ILLEGAL_WARN_WINDOW decisions (docs/envs/illegal-actions.md states these figures)."""
    assert ILLEGAL_WARN_SHARE == 0.05 and ILLEGAL_WARN_LEVEL == 0.001 and ILLEGAL_WARN_WINDOW == 100
    assert illegal_beyond_rate(3, 3) and not illegal_beyond_rate(2, 2)
    assert not illegal_beyond_rate(0, 100) and not illegal_beyond_rate(5, 100)
    assert abs(binomial_tail(3, 3, 0.05) - 0.05**3) < 1e-15
    assert abs(binomial_tail(2, 10, 0.05) - (1 - 0.95**10 - 10 * 0.05 * 0.95**9)) < 1e-12

    def warned_within_a_window(rate: float) -> float:
        """The chance that an agent illegal at ``rate`` is warned within ILLEGAL_WARN_WINDOW decisions."""
        alive, warned = {0: 1.0}, 0.0  # illegal count -> chance, among histories not warned yet
        for n in range(1, ILLEGAL_WARN_WINDOW + 1):
            step: dict[int, float] = {}
            for k, chance in alive.items():
                step[k] = step.get(k, 0.0) + chance * (1 - rate)
                if illegal_beyond_rate(k + 1, n):
                    warned += chance * rate
                else:
                    step[k + 1] = step.get(k + 1, 0.0) + chance * rate
            alive = step
        return warned

    assert warned_within_a_window(0.05) < 0.005  # at the rate itself: 0.48 %
    assert warned_within_a_window(0.02) < 1e-4  # a policy that mostly reads the mask: 0.006 %
    assert warned_within_a_window(0.5) > 0.999999  # a mostly illegal one: at once
    assert warned_within_a_window(0.2) > 0.95


def test_max_cycles_warns_within_the_cycles():
    env = csr_marl.parallel_env("tasks/classify", max_cycles=30)
    _, infos = env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while env.agents:
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
            task_env = gymnasium.make(f"csr_marl/{task}", max_episode_steps=40)
            play_task(task_env, legal)
            task_env.reset(seed=1)
            task_env.close()
        parallel = csr_marl.parallel_env("standard_day", max_cycles=200)  # max_cycles
        _, infos = parallel.reset(seed=0)
        while parallel.agents:
            _, _, _, _, infos = parallel.step({a: legal(infos[a]["action_mask"]) for a in parallel.due_decisions})
        parallel.reset(seed=1)


def test_supersuit_and_sb3_ppo_are_warned_inside_learn():
    """The parallel env through SuperSuit's vector env, trained by Stable-Baselines3's PPO, which
    ignores masks: the warning comes inside learn(), long before the shift ends."""
    supersuit, sb3 = need("supersuit"), need("stable_baselines3")
    env = csr_marl.parallel_env("standard_day")
    vec = supersuit.concat_vec_envs_v1(supersuit.pettingzoo_env_to_vec_env_v1(env), 1, num_cpus=0,
                                       base_class="stable_baselines3")
    model = sb3.PPO("MlpPolicy", vec, n_steps=64, batch_size=224, n_epochs=1, device="cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own filter for a UserWarning outside __main__
        model.learn(total_timesteps=64 * vec.num_envs)  # 64 steps of the shift
        [message] = ours(caught)
    trained = vec.venv.vec_envs[0].par_env.unwrapped  # SuperSuit's copy of the env
    assert trained.center.env.now < 60  # the 480-minute shift is far from over
    assert message.startswith("illegal actions: ") and "MaskablePPO" in message
    vec.close()
