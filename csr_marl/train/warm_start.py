"""Warm start: behaviour cloning of a built-in policy before reinforcement learning (``warm_start``).

A teacher (any registered policy, e.g. the tuned ``text_classifier``) plays ``warm_start_episodes``
episodes of the *training* scenario (train-split tickets only, seeds apart from training's and the
learning curve's); at each of its decisions the environment's own observation (``uniform_spaces``,
exactly what the actor reads) and the teacher's action are recorded. Each staffed role's actor is then
fitted to its role's actions by masked cross-entropy (Adam, weight decay, ``warm_start_epochs`` passes)
before the first rollout. The critic starts untrained: PPO then improves on the teacher from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..config.scenario import Scenario
from ..envs.observations import ObservationEncoder
from ..policies import make_policy
from ..simulation import simulate
from .checkpoint import observation_layout
from .networks import MASKED_LOGIT, RoleActor

WARM_START_SEED_BASE = 200_000  # teacher episode e runs with seed 200_000 + e (no training or curve seed)
BATCH = 256


class _Recorder:
    """The teacher plays; each decision's observation, legal actions and the teacher's action are kept."""

    def __init__(self, scenario: Scenario, teacher: Any) -> None:
        self.layout = observation_layout(scenario)
        self.encoder = ObservationEncoder(self.layout, scenario)
        self.teacher = teacher
        self.center: Any = None
        self.samples: dict[str, list[tuple[np.ndarray, np.ndarray, int]]] = {}

    def bind(self, center: Any) -> None:
        self.center = center
        self.encoder.invalidate()
        bind = getattr(self.teacher, "bind", None)
        if bind is not None:
            bind(center)

    def __call__(self, decision: Any) -> int:
        action = int(self.teacher(decision))
        self.encoder.invalidate()
        observation = self.encoder.observe(self.center, decision.staff, decision)
        mask = self.encoder.mask(self.layout.roles_layout[decision.role], decision).astype(bool)
        self.samples.setdefault(decision.role, []).append((observation, mask, action))
        return action


def record(scenario: Scenario, teacher: str, episodes: int, seed: int) -> dict[str, list[tuple[np.ndarray, np.ndarray, int]]]:
    """The teacher's decisions per role over ``episodes`` episodes of ``scenario``."""
    recorder = _Recorder(scenario, make_policy(teacher, scenario, np.random.default_rng(seed)))
    for episode in range(episodes):
        simulate(scenario, recorder, WARM_START_SEED_BASE + episode)
    return recorder.samples


def clone(actor: RoleActor, samples: dict[str, list[tuple[np.ndarray, np.ndarray, int]]], epochs: int, seed: int) -> dict[str, float]:
    """Fit each role's actor to its recorded actions; returns each role's training accuracy."""
    generator = torch.Generator().manual_seed(seed)
    accuracy = {}
    for role, rows in samples.items():
        if role not in actor.roles:
            continue
        network = actor.roles[role]
        x = torch.from_numpy(np.stack([r[0] for r in rows]))
        mask = torch.from_numpy(np.stack([r[1] for r in rows]))
        y = torch.tensor([r[2] for r in rows])
        optimiser = torch.optim.Adam(network.parameters(), lr=1e-3, weight_decay=1e-4)
        for _ in range(epochs):
            for batch in torch.randperm(len(y), generator=generator).split(BATCH):
                logits = network(x[batch]).masked_fill(~mask[batch], MASKED_LOGIT)
                loss = torch.nn.functional.cross_entropy(logits, y[batch])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        with torch.no_grad():
            predicted = network(x).masked_fill(~mask, MASKED_LOGIT).argmax(dim=1)
        accuracy[role] = float((predicted == y).float().mean())
    return accuracy


def warm_start(
    actor: RoleActor, scenario: Scenario, teacher: str, episodes: int, epochs: int, seed: int,
    roles: list[str] | None = None,
) -> dict[str, Any]:
    """Record the teacher on ``scenario`` and clone it into ``actor`` (module docstring); ``roles``: fit
    only these (None: every staffed role), so a role started from a checkpoint can keep its weights."""
    samples = record(scenario, teacher, episodes, seed)
    if roles is not None:
        samples = {role: rows for role, rows in samples.items() if role in roles}
    accuracy = clone(actor, samples, epochs, seed)
    return {"teacher": teacher, "decisions": {r: len(v) for r, v in samples.items()}, "train_accuracy": accuracy}
