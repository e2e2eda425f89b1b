"""The parallel environment: event-driven steps by default, decision epochs as an option."""

from __future__ import annotations

import math

import numpy as np
import pytest
from env_helpers import SHORT, masked_random, random_parallel_episode

import csr_marl
from csr_marl.policies import HeuristicPolicy
from csr_marl.sim import IllegalActionError, Phase


def heuristic_parallel_kpis(scenario, seed: int, interval: float) -> dict[str, float]:
    env = csr_marl.parallel_env(scenario, decision_interval_minutes=interval)
    env.reset(seed=seed)
    policy = HeuristicPolicy(scenario, env.center.streams["policy"])
    while env.agents:
        env.step({agent: policy(decision) for agent, decision in env.due_decisions.items()})
    return env.center.result().kpis


def test_every_agent_whose_decision_fell_due_in_the_epoch_acts_in_the_step():
    env = csr_marl.parallel_env("standard_day", overrides=SHORT, decision_interval_minutes=2.0)
    observations, infos = env.reset(seed=1)
    policy = masked_random(1)
    deciding_per_step = []
    while env.agents:
        due = env.due_decisions
        assert due  # epochs with nothing to decide are skipped
        now = infos[env.agents[0]]["sim_time"]
        assert now == pytest.approx(2.0 * round(now / 2.0))  # steps fall on the epoch grid
        assert all(now - 2.0 <= d.time <= now for d in due.values())  # fell due during the epoch
        for agent, info in infos.items():
            mask = info["action_mask"]
            assert info["decision_due"] == (agent in due)
            if agent in due:
                assert np.flatnonzero(mask).tolist() == sorted(due[agent].legal) and not mask[-1]
            else:
                assert mask.sum() == 1 and mask[-1] == 1  # only the no-op
        deciding_per_step.append(len(due))
        actions = {a: policy(info["action_mask"]) for a, info in infos.items()}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        assert set(observations) == set(rewards) == set(truncations) == set(env.possible_agents)
    assert all(truncations.values()) and not any(terminations.values())
    assert max(deciding_per_step) >= 3


def test_same_seed_same_epochs():
    def run(seed):
        env = csr_marl.parallel_env("tasks/queue5")
        return [
            (actions, {a: obs.tobytes() for a, obs in observations.items()}, rewards)
            for actions, observations, rewards, _ in random_parallel_episode(env, seed)
        ]

    assert run(2) == run(2)
    assert run(2) != run(3)


def test_waiting_agents_may_be_left_out_and_their_actions_are_ignored():
    def first_steps(actions_for):
        env = csr_marl.parallel_env("standard_day", overrides=SHORT)
        env.reset(seed=0)
        policy = HeuristicPolicy(env.scenario, env.center.streams["policy"])
        for _ in range(30):
            env.step(actions_for(env, {a: policy(d) for a, d in env.due_decisions.items()}))
        return env.center.flow, env.center.now

    only_due = first_steps(lambda env, due: due)
    everyone = first_steps(lambda env, due: {**{a: 0 for a in env.agents}, **due})
    assert only_due == everyone


@pytest.mark.parametrize("strict", [False, True])
def test_a_waiting_agent_s_action_is_ignored_yet_must_be_an_action(strict):
    env = csr_marl.parallel_env("standard_day", overrides=SHORT, strict=strict)
    env.reset(seed=0)
    waiting = next(a for a in env.agents if a not in env.due_decisions)
    actions = {a: d.legal[0] for a, d in env.due_decisions.items()}
    for bad in ("0", 0.5, None):
        with pytest.raises(ValueError, match=waiting):
            env.step({**actions, waiting: bad})
    env.step({**actions, waiting: np.int64(env.action_space(waiting).n - 1)})  # the no-op, as numpy gives it


def test_refused_steps_name_the_problem_and_change_nothing():
    env = csr_marl.parallel_env("standard_day", overrides=SHORT, strict=True)
    env.reset(seed=0)
    acting, decision = next(iter(env.due_decisions.items()))
    waiting = next(a for a in env.agents if a not in env.due_decisions)
    actions = {a: env.action_space(a).n - 1 for a in env.agents}
    actions.update({a: d.legal[0] for a, d in env.due_decisions.items()})
    with pytest.raises(IllegalActionError, match=f"{waiting} has nothing to decide"):
        env.step({**actions, waiting: 0})
    with pytest.raises(IllegalActionError, match=f"{acting} .*legal actions"):
        env.step({**actions, acting: env.action_space(acting).n - 1})
    with pytest.raises(ValueError, match=f"no action for {acting}"):
        env.step({a: v for a, v in actions.items() if a != acting})
    with pytest.raises(ValueError, match="unknown agent"):
        env.step({**actions, "manager_0": 0})
    assert env.pending_decision is decision
    env.step(actions)  # nothing was applied by the refused steps


def test_two_picks_of_one_ticket_go_to_the_decision_that_fell_due_first():
    busy = {"staffing": {"triage": 0, "resolver": 6, "escalation": 1}}  # tickets queue for resolvers
    env = csr_marl.parallel_env("standard_day", overrides=busy, decision_interval_minutes=3.0)
    env.reset(seed=0)
    policy = HeuristicPolicy(env.scenario, env.center.streams["policy"])
    while env.agents:
        picks = [d for d in env.due_decisions.values() if d.phase is Phase.PICK and d.role == "resolver"]
        if len(picks) >= 2 and len(picks[0].slots) >= 2:
            break
        env.step({a: policy(d) for a, d in env.due_decisions.items()})
    else:
        pytest.fail("no epoch with two resolvers picking")
    first, second = picks[:2]
    assert first.time <= second.time
    wanted, next_in_line = first.slots[0], first.slots[1]
    actions = {a: policy(d) for a, d in env.due_decisions.items()}
    actions[first.agent] = actions[second.agent] = 0  # both want the same ticket
    env.step(actions)
    assert first.staff.ticket is wanted
    assert second.staff.ticket is next_in_line


@pytest.mark.slow
def test_kpis_converge_to_the_aec_envs_as_the_interval_shrinks():
    scn = csr_marl.load_scenario("standard_day", overrides={"horizon_minutes": 120})
    seeds = range(3)
    aec = [csr_marl.simulate(scn, policy="heuristic", seed=s).kpis for s in seeds]

    def gap(interval: float) -> float:
        runs = [heuristic_parallel_kpis(scn, s, interval) for s in seeds]
        return sum(
            abs(r[k] - a[k]) for r, a in zip(runs, aec) for k in ("service_level_first_response", "asa_minutes")
        )

    gaps = [gap(interval) for interval in (2.0, 0.5, 0.05, 0.001)]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > 1.0
    assert gaps[-1] < 0.05


def test_max_tickets_ends_with_terminations_in_the_parallel_api():
    env = csr_marl.parallel_env("tasks/queue5")
    env.reset(seed=0)
    policy = HeuristicPolicy(env.scenario)
    while env.agents:
        _, _, terminations, truncations, _ = env.step({a: policy(d) for a, d in env.due_decisions.items()})
    assert all(terminations.values()) and not any(truncations.values())


def test_max_cycles_truncates_after_that_many_steps_in_both_apis():
    par = csr_marl.parallel_env("standard_day", max_cycles=7)
    par.reset(seed=0)
    steps = 0
    while par.agents:
        _, _, terminations, truncations, _ = par.step({a: d.legal[0] for a, d in par.due_decisions.items()})
        steps += 1
    assert steps == 7 and all(truncations.values()) and not any(terminations.values())
    assert par.center.done and par.center.end_time < 480
    kpis = par.center.result().kpis
    assert all(0.0 <= kpis[k] <= 1.0 for k in ("service_level", "occupancy_resolver") if not math.isnan(kpis[k]))

    aec = csr_marl.env("standard_day", max_cycles=3)  # cyclic turns: every agent acts once per epoch
    aec.reset(seed=0)
    turns = dict.fromkeys(aec.possible_agents, 0)
    for agent in aec.agent_iter():
        _, _, terminated, truncated, info = aec.last()
        turns[agent] += 1
        aec.step(None if terminated or truncated else int(np.flatnonzero(info["action_mask"])[0]))
    assert set(turns.values()) == {4}  # three cycles and the dead step
    with pytest.raises(ValueError, match="max_cycles"):
        csr_marl.env("standard_day", max_cycles=3, turns="event")


def heuristic_steps(env) -> tuple[int, int]:
    """Play a reset parallel env to its end with the heuristic team: (steps, decisions)."""
    policy = HeuristicPolicy(env.scenario, env.center.streams["policy"])
    steps = decisions = 0
    while env.agents:
        due = env.due_decisions
        steps, decisions = steps + 1, decisions + len(due)
        env.step({agent: policy(decision) for agent, decision in due.items()})
    return steps, decisions


@pytest.mark.parametrize("scenario", ["standard_day", "surge", "night_shift"])
def test_the_default_parallel_env_is_the_aec_envs_contact_center(scenario):
    # Event-driven steps: no decision waits, so with the same seed and team the KPIs are the core's.
    scn = csr_marl.load_scenario(scenario, overrides={"horizon_minutes": 360})  # past every shift change
    for seed in range(2):
        env = csr_marl.parallel_env(scn)
        env.reset(seed=seed)
        steps, decisions = heuristic_steps(env)
        assert decisions >= steps  # every step holds at least one real decision
        kpis = env.center.result().kpis
        core = csr_marl.simulate(scn, policy="heuristic", seed=seed).kpis
        for key in ("service_level_first_response", "service_level", "abandonment_rate", "resolved", "asa_minutes"):
            assert kpis[key] == pytest.approx(core[key], nan_ok=True), key


def test_epochs_carry_several_decisions_per_step():
    # v0 held exactly one decision per step; 1-minute epochs hold at least three times that.
    env = csr_marl.parallel_env("standard_day", overrides={"horizon_minutes": 240}, decision_interval_minutes=1.0)
    env.reset(seed=0)
    steps, decisions = heuristic_steps(env)
    assert decisions / steps >= 3.0


@pytest.mark.parametrize("interval", [1e-300, 1e-15, 1e-9, 0.0, -1.0, math.inf, math.nan, True, "1"])
def test_intervals_the_clock_cannot_step_are_refused_at_construction(interval):
    with pytest.raises(ValueError, match="decision_interval_minutes") as refused:
        csr_marl.parallel_env("tasks/queue5", decision_interval_minutes=interval)
    assert "\n" not in str(refused.value)


def test_a_pick_waiting_for_the_epoch_s_end_is_withdrawn_when_its_staff_member_goes_off_shift():
    floor = {"staffing": {"triage": 0, "resolver": 3, "escalation": 0}, "customers.patience": None, "horizon_minutes": 90}

    def run(overrides):
        env = csr_marl.parallel_env("standard_day", overrides=overrides, decision_interval_minutes=5.0)
        env.reset(seed=0)
        policy = HeuristicPolicy(env.scenario, env.center.streams["policy"])
        while env.agents:
            due = env.due_decisions
            yield env, due
            env.step({a: policy(d) for a, d in due.items()})

    # A pick by resolver_2 that falls due well inside an epoch: its shift ends right after it.
    pick = next(
        d for _, due in run(floor) for d in due.values()
        if d.phase is Phase.PICK and d.agent == "resolver_2" and d.time % 5.0 < 4.0
    )
    change = pick.time + 0.5
    shifted = {**floor, "staffing": {**floor["staffing"], "shifts": [{"at_minute": change, "resolver": 2}]}}
    for env, due in run(shifted):
        if env.center.now > change:
            assert "resolver_2" not in due  # its pick was withdrawn: off shift, it takes nothing new
    assert env.center.staff[2].ticket is None or env.center.staff[2].busy_since < change


def test_waiting_agents_get_the_constant_waiting_observation_and_the_end_a_full_one():
    """Only deciding agents' observations are computed: a waiting agent's is its role's constant
    (phase "none", no ticket, no floor), marked decision_due False; at the end every agent's is full."""
    env = csr_marl.parallel_env("standard_day", overrides=SHORT)
    encoder = env.unwrapped._driver.encoder
    observations, infos = env.reset(seed=4)
    policy = masked_random(4)
    waiting_seen = 0
    while env.agents:
        for agent, info in infos.items():
            if not info["decision_due"]:
                role = agent.rsplit("_", 1)[0]
                assert np.array_equal(observations[agent], encoder.waiting_observation(role))
                assert env.observation_space(agent).contains(observations[agent])
                waiting_seen += 1
        actions = {agent: policy(info["action_mask"]) for agent, info in infos.items()}
        observations, _, _, _, infos = env.step(actions)
    assert waiting_seen > 0
    for agent, observation in observations.items():  # the end: full observations (the floor is not zeros)
        role = agent.rsplit("_", 1)[0]
        assert not np.array_equal(observation, encoder.waiting_observation(role))


def test_each_step_hands_out_done_flags_of_its_own():
    # Users mark agents done in what a step returned (e.g. a wrapper that drops agents): the next
    # step's flags must not see it.
    env = csr_marl.parallel_env("standard_day", overrides=SHORT)
    _, infos = env.reset(seed=4)
    policy = masked_random(4)
    returned = []
    while env.agents:
        _, _, terminations, truncations, infos = env.step({a: policy(i["action_mask"]) for a, i in infos.items()})
        assert terminations is not truncations
        returned.append((dict(terminations), dict(truncations)))
        for flags in (terminations, truncations):
            for agent in flags:
                flags[agent] = True
    assert len(returned) > 10
    assert not any(any(t.values()) or any(u.values()) for t, u in returned[:-1])  # nobody done before the end
    assert all(returned[-1][1].values())


def test_every_agent_s_arrays_are_its_own_and_writable():
    # Learners and wrappers write into what a step returned (normalising observations in place, masking
    # actions): no agent's observation, mask or reward components may share memory with another's, with
    # a later step's, or with the environment's constants.
    env = csr_marl.parallel_env("standard_day", overrides=SHORT)
    encoder = env.unwrapped._driver.encoder
    observations, infos = env.reset(seed=4)
    policy = masked_random(4)
    earlier: list[np.ndarray] = []
    checked = 0
    while env.agents:
        arrays = [observations[a] for a in infos] + [i["action_mask"] for i in infos.values()]
        arrays += [i["reward_components"] for i in infos.values()]
        assert all(array.flags.writeable for array in arrays)
        for k, array in enumerate(arrays):
            for other in arrays[k + 1:] + earlier[-3 * len(infos):]:
                assert not np.shares_memory(array, other)
        checked += len(arrays)
        actions = {agent: policy(info["action_mask"]) for agent, info in infos.items()}
        for array in arrays:  # a user's in-place change ...
            array[...] = 7
        earlier = arrays
        observations, _, _, _, infos = env.step(actions)
        for agent, info in infos.items():  # ... reaches neither the next step nor the role's constants
            assert not (observations[agent] == 7).all() and not (info["action_mask"] == 7).any()
    assert checked > 1000
    for role in ("triage", "resolver", "escalation"):
        assert not (encoder.waiting_observation(role) == 7).any()
