"""What a policy is, and the registry of built-in ones."""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from ..config.scenario import Scenario
from ..sim.decisions import Decision


class Policy(Protocol):
    """Anything that maps a pending decision to a legal action index."""

    def __call__(self, decision: Decision) -> int: ...


PolicyFactory = Callable[[Scenario, np.random.Generator], Policy]

#: The team ``csr_marl.simulate`` and every analyst command (simulate, sweep, staff, schedule) use
#: when none is named: staff who know every issue, the team a contact center staffs for. RL and LLM
#: work names its baseline (``heuristic``, the fair one that knows only the train split) explicitly.
DEFAULT_POLICY = "expert"
_REGISTRY: dict[str, PolicyFactory] = {}


def register(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def add(factory: PolicyFactory) -> PolicyFactory:
        _REGISTRY[name] = factory
        return factory

    return add


def policy_names() -> list[str]:
    return sorted(_REGISTRY)


def make_policy(name: str, scenario: Scenario, rng: np.random.Generator) -> Policy:
    """Build a built-in policy by name for a scenario, drawing any randomness from ``rng``."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; built-in policies: {', '.join(policy_names())}") from None
    return factory(scenario, rng)


@register("random")
class RandomPolicy:
    """Uniform over the legal actions (the action mask)."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[float] = []

    def __call__(self, decision: Decision) -> int:
        if not self._buffer:
            self._buffer = self._rng.random(256).tolist()
        legal = decision.legal
        return legal[min(int(self._buffer.pop() * len(legal)), len(legal) - 1)]
