"""``simulate``: run one episode of the core with a built-in or user policy (no PettingZoo involved)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

from .config.loading import load_scenario
from .config.scenario import Scenario
from .policies.base import DEFAULT_POLICY, Policy, make_policy
from .sim.center import ContactCenter
from .sim.decisions import Decision
from .sim.result import SimulationResult


def simulate(
    scenario: str | os.PathLike[str] | Scenario,
    policy: str | Callable[[Decision], int] = DEFAULT_POLICY,
    seed: int | None = 0,
    *,
    overrides: Mapping[str, Any] | None = None,
    log: bool | str | Path = False,
) -> SimulationResult:
    """Run ``scenario`` for one episode and return its KPIs.

    ``policy`` is a built-in name (default ``expert``: staff who know every issue, the same default as
    ``csr-marl simulate``; ``heuristic``, the fair RL baseline; ``random``, ``fifo``, ``escalate_all``) or any callable
    taking a :class:`~csr_marl.sim.Decision` and returning a legal action index; a callable with a
    ``bind(center)`` method (a trained :class:`~csr_marl.train.CheckpointPolicy`) is bound to the
    episode's core before its first decision. ``log=True`` keeps a
    per-contact log in ``result.log``; a ``.csv`` / ``.jsonl`` path streams it to that file instead.
    The same scenario and seed always give the same result.
    """
    scn = scenario if isinstance(scenario, Scenario) and not overrides else load_scenario(scenario, overrides)
    center = ContactCenter(scn, seed, log=log)
    try:
        decide: Policy = (
            make_policy(policy, scn, center.streams["policy"]) if isinstance(policy, str) else policy
        )
        bind = getattr(decide, "bind", None)
        if bind is not None:
            bind(center)
        if isinstance(policy, str):
            center.answer_inline(decide)  # a built-in policy answers from inside the simulation
        next_decision, apply = center.next_decision, center.decide
        decision = next_decision()
        while decision is not None:
            apply(decide(decision))
            decision = next_decision()
    except BaseException:
        if center.log is not None:
            center.log.discard()  # a failed run leaves the log file it was given untouched
        raise
    return center.result()
