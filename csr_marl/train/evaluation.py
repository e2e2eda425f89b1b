"""Playing whole episodes with a policy through the AEC environment, scored as ``simulate`` scores them.

``reset(seed=s)`` seeds the core exactly as ``csr_marl.simulate(scenario, seed=s)`` does, and the
result is the core's own (:meth:`ContactCenter.result`), so a trained team's team return and KPIs
compare directly with the random and heuristic baselines run on the same seeds.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..config.scenario import Scenario
from ..envs import raw_env
from ..sim.decisions import Decision
from ..sim.result import SimulationResult

Seed = int | np.random.SeedSequence


def play_episode(scenario: Scenario, policy: Callable[[Decision], int], seed: Seed) -> SimulationResult:
    """One episode: ``policy`` answers every decision; a policy with ``bind`` is bound to the core first."""
    env: Any = raw_env(scenario)
    env.reset(seed=seed)
    bind = getattr(policy, "bind", None)
    if bind is not None:
        bind(env.center)
    while (decision := env.pending_decision) is not None:
        env.step(policy(decision))
    return env.center.result()


def play_episodes(
    scenario: Scenario, policy: Callable[[Decision], int], seeds: Iterable[Seed]
) -> list[SimulationResult]:
    return [play_episode(scenario, policy, seed) for seed in seeds]
