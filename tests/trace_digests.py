"""Digests of whole episodes: KPIs, flow, reward totals, and a hash of the event trace.

Shared by ``tests/test_identical_results.py`` (which compares them with values pinned from the code
before the core's speed work) and runnable to print the current values::

    python tests/trace_digests.py
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

SHORT = {"horizon_minutes": 360, "warmup_minutes": 30}
MMC = {"max_tickets": 3000, "horizon_minutes": 4000, "warmup_minutes": 0}


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _floats(mapping: dict[str, Any]) -> list[tuple[str, Any]]:
    """A mapping's items in key order (hashed through repr, which writes NaN as ``nan``, so a NaN KPI
    compares equal to itself)."""
    return sorted(mapping.items())


def simulate_digest(scenario: str, policy: str, seed: int) -> str:
    """``simulate`` with the per-contact log: KPIs, breakdown, flow, rewards, intervals and the log."""
    import csr_marl

    overrides = MMC if scenario == "mmc" else SHORT
    result = csr_marl.simulate(scenario, policy=policy, seed=seed, overrides=overrides, log=True)
    intervals = result.intervals
    table = intervals.to_dict("records") if hasattr(intervals, "to_dict") else intervals
    return _digest(_floats(result.kpis), result.breakdown, result.flow, _floats(result.reward_components),
                   result.log, repr(table))


def center_digest(scenario: str, seed: int) -> str:
    """A core driven decision by decision (no inline answers): every decision's agent, time, phase,
    legal actions, ticket and answer, then the KPIs and the reward ledger's entries."""
    import csr_marl
    from csr_marl.policies import make_policy
    from csr_marl.sim import ContactCenter

    scn = csr_marl.load_scenario(scenario, overrides=MMC if scenario == "mmc" else SHORT)
    center = ContactCenter(scn, seed, track_rewards=True)
    policy = make_policy("random", scn, center.streams["policy"])
    trace = []
    while (decision := center.next_decision()) is not None:
        action = policy(decision)
        ticket = decision.ticket.id if decision.ticket is not None else None
        trace.append((decision.agent, decision.time, decision.phase.value, tuple(decision.legal), ticket, action))
        center.decide(action)
    result = center.result()
    return _digest(trace, _floats(result.kpis), result.flow, _floats(result.reward_components),
                   getattr(center.rewards, "entries", None))


def _masked_random(seed: int) -> Callable[[np.ndarray], int]:
    rng = np.random.default_rng(seed)
    return lambda mask: int(rng.choice(np.flatnonzero(mask)))


def aec_digest(scenario: str, seed: int) -> str:
    """The AEC env under a masked random team: each turn's agent, observation, reward, action."""
    import csr_marl

    env = csr_marl.env(scenario, overrides=SHORT)
    env.reset(seed=seed)
    choose = _masked_random(seed)
    trace = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else choose(info["action_mask"])
        trace.append((agent, hashlib.sha256(np.asarray(observation).tobytes()).hexdigest()[:12],
                      float(reward), action, tuple(np.round(info["reward_components"], 12))))
        env.step(action)
    return _digest(trace, _floats(env.unwrapped.center.result().kpis))


def parallel_digest(scenario: str, seed: int) -> str:
    """The default (event-driven) parallel env under a masked random team: per step, the agents whose
    decision is due with their observation, and every agent's reward."""
    import csr_marl

    env = csr_marl.parallel_env(scenario, overrides=SHORT)
    observations, infos = env.reset(seed=seed)
    choose = _masked_random(seed)
    trace = []
    while env.agents:
        due = [agent for agent in env.agents if infos[agent]["decision_due"]]
        actions = {agent: choose(infos[agent]["action_mask"]) for agent in due}
        trace.append(tuple(
            (agent, hashlib.sha256(np.asarray(observations[agent]).tobytes()).hexdigest()[:12], actions[agent])
            for agent in due
        ))
        observations, rewards, _, _, infos = env.step(actions)
        trace.append(tuple(sorted((agent, round(float(r), 12)) for agent, r in rewards.items())))
    return _digest(trace, _floats(env.unwrapped.center.result().kpis))


CASES: dict[str, Callable[[], str]] = {
    "simulate mmc heuristic 0": lambda: simulate_digest("mmc", "heuristic", 0),
    "simulate mmc random 1": lambda: simulate_digest("mmc", "random", 1),
    "simulate standard_day heuristic 0": lambda: simulate_digest("standard_day", "heuristic", 0),
    "simulate standard_day random 2": lambda: simulate_digest("standard_day", "random", 2),
    "simulate surge heuristic 3": lambda: simulate_digest("surge", "heuristic", 3),
    "simulate night_shift fifo 4": lambda: simulate_digest("night_shift", "fifo", 4),
    "simulate two_tier escalate_all 5": lambda: simulate_digest("two_tier", "escalate_all", 5),
    "center mmc 0": lambda: center_digest("mmc", 0),
    "center standard_day 1": lambda: center_digest("standard_day", 1),
    "aec standard_day 0": lambda: aec_digest("standard_day", 0),
    "aec surge 1": lambda: aec_digest("surge", 1),
    "parallel standard_day 0": lambda: parallel_digest("standard_day", 0),
    "parallel night_shift 2": lambda: parallel_digest("night_shift", 2),
}


if __name__ == "__main__":
    for name, case in CASES.items():
        print(f"    {name!r}: {case()!r},")
