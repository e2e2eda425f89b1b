"""An ended episode holds no reference cycle: its center and tickets are freed as soon as nobody holds
the center (at the environment's next reset), not at the garbage collector's next full pass.

Each test runs with the collector off, as between two of its passes: whatever is still tracked after
the last reference goes is held by a cycle. Counting by type works for the pure and compiled builds
alike (a compiled class takes no weak reference).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import csr_marl
from csr_marl.config import load_scenario
from csr_marl.policies import make_policy
from csr_marl.sim import ContactCenter
from csr_marl.sim.tickets import Ticket

# Returning customers (scheduled callbacks), abandonment (deadline heaps), shifts (a shift process).
SCENARIOS = ("standard_day", "night_shift")


@pytest.fixture()
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def alive(cls: type) -> int:
    """Instances of ``cls`` the collector tracks (held by something, or by a cycle)."""
    return sum(type(o) is cls for o in gc.get_objects())


def play_aec(env, seed: int, steps: int | None = None) -> None:
    """Each agent takes its last legal action, for ``steps`` turns or to the episode's end."""
    env.reset(seed=seed)
    for turn, agent in enumerate(env.agent_iter()):
        if steps is not None and turn == steps:
            return
        _, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else int(info["action_mask"].nonzero()[0][-1]))


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_finished_center_is_freed_with_its_last_reference(name: str, collector_off: None) -> None:
    scn = load_scenario(name, overrides={"horizon_minutes": 240})
    centers, tickets = alive(ContactCenter), alive(Ticket)  # other tests' (fixtures, caches)
    center = ContactCenter(scn, seed=3)
    policy = make_policy("random", scn, center.streams["policy"])
    while (decision := center.next_decision()) is not None:
        center.decide(policy(decision))
    assert center.done and center.flow["arrived"] > 50
    result = center.result()  # readable after the end, as before
    assert result.kpis["offered"] > 0
    assert center.queues["resolver"].size == sum(1 for _ in center.queues["resolver"])
    del center, policy, decision
    assert alive(ContactCenter) == centers
    assert alive(Ticket) == tickets


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("steps", [None, 300])  # the episode played to its end, or left in the middle
def test_reset_frees_the_last_episode(name: str, steps: int | None, collector_off: None) -> None:
    others = alive(ContactCenter)
    env = csr_marl.raw_env(name, overrides={"horizon_minutes": 240})
    play_aec(env, 1, steps)
    first = env.unwrapped.center
    assert first.flow["arrived"] > 0
    del first
    play_aec(env, 2, 5)
    assert alive(ContactCenter) == others + 1  # the running episode's only
    env.close()


def test_parallel_reset_frees_the_last_episode(collector_off: None) -> None:
    others = alive(ContactCenter)
    env = csr_marl.parallel_env("standard_day", overrides={"horizon_minutes": 240})
    for seed in (1, 2, 3):
        _, infos = env.reset(seed=seed)
        while env.agents:
            actions = {agent: int(info["action_mask"].nonzero()[0][-1]) for agent, info in infos.items()}
            _, _, _, _, infos = env.step(actions)
        assert alive(ContactCenter) == others + 1
    env.close()
