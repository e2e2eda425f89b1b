"""Checkpoints: the trained actor and critic with what they were trained on, and the policy they give.

A checkpoint is one ``torch.save`` file of plain data (loadable with ``weights_only=True``): the
training config, the observation layout (feature names per role), the size of the global state a
centralised critic reads (0 for none), the network weights, the optimiser state and how far training
had got. An evaluation copy (:func:`evaluation_copy`) keeps the actor alone: it plays and scores
exactly as the full checkpoint does, at about a third of the size. :class:`CheckpointPolicy` turns a
checkpoint into a built-in-style policy, a callable from a core :class:`~csr_marl.sim.Decision` to an
action, that encodes the observation exactly as the environment does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config.loading import load_scenario, load_ticket_bank
from ..config.scenario import Scenario
from ..envs.layout import Layout
from ..envs.observations import ObservationEncoder
from ..sim.center import ContactCenter
from ..sim.decisions import Decision
from .config import TrainConfig
from .networks import RoleActor, RoleCritic

FORMAT = "csr_marl.train.checkpoint/1"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or does not fit the scenario it is asked to play."""


def observation_layout(scenario: Scenario) -> Layout:
    """The ``uniform_spaces`` layout the environment gives ``scenario`` (what the networks read)."""
    return Layout(scenario, load_ticket_bank(scenario.tickets.bank), uniform=True)


def layout_signature(layout: Layout) -> dict[str, list[str]]:
    """Feature names per role: two layouts with the same signature encode observations alike."""
    return {role: list(roles_layout.names) for role, roles_layout in layout.roles_layout.items()}


def build_networks(
    signature: dict[str, list[str]], n_actions: int, hidden: int, state_size: int = 0
) -> tuple[RoleActor, RoleCritic]:
    """One actor and one critic over the roles of ``signature``; the critic also reads ``state_size``
    global-state entries after the observation (a centralised critic) when that is above 0."""
    roles = list(signature)
    obs_size = len(signature[roles[0]])
    return RoleActor(obs_size, n_actions, roles, hidden), RoleCritic(obs_size, roles, hidden, state_size)


def save_checkpoint(
    path: str | os.PathLike[str],
    *,
    config: TrainConfig,
    layout: Layout,
    actor: RoleActor,
    critic: RoleCritic,
    optimizer: Any | None,
    progress: dict[str, float],
) -> Path:
    """Write a checkpoint (atomically: a reader never sees half a file); ``optimizer`` has ``state_dict()``."""
    payload = {
        "format": FORMAT,
        "config": config.model_dump(mode="json"),
        "layout": layout_signature(layout),
        "n_actions": int(actor.out_size),
        "state_size": int(critic.state_size),
        "actor": actor.state_dict(),
        "critic": critic.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "progress": dict(progress),
    }
    return _write(payload, path)


def _write(payload: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """``torch.save`` atomically: a reader never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    torch.save(payload, partial)
    os.replace(partial, target)
    return target


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A checkpoint file's payload, or one clear CheckpointError."""
    source = Path(path)
    if not source.is_file():
        raise CheckpointError(f"checkpoint not found: {source}")
    try:
        payload = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a file that is not a checkpoint
        raise CheckpointError(f"{source} is not a csr_marl checkpoint ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{source} is not a csr_marl checkpoint (expected format {FORMAT})")
    return payload


@dataclass
class Checkpoint:
    """A loaded checkpoint: its config, observation layout, networks and progress."""

    path: Path
    config: TrainConfig
    layout: dict[str, list[str]]
    actor: RoleActor
    critic: RoleCritic | None  # None in an evaluation copy
    optimizer_state: dict[str, Any] | None
    progress: dict[str, float]

    def scenario(self) -> Scenario:
        """The scenario it was trained on, with its overrides and its own rewards."""
        return self.config.evaluation_scenario()


def load_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    source = Path(path)
    payload = _read(source)
    config = TrainConfig.model_validate(payload["config"])
    # Checkpoints from before centralised critics have no state_size: their critic reads observations only.
    actor, critic = build_networks(payload["layout"], payload["n_actions"], config.hidden, payload.get("state_size", 0))
    actor.load_state_dict(payload["actor"])
    actor.eval()
    if payload["critic"] is None:  # an evaluation copy
        return Checkpoint(source, config, payload["layout"], actor, None, None, payload["progress"])
    critic.load_state_dict(payload["critic"])
    critic.eval()
    return Checkpoint(source, config, payload["layout"], actor, critic, payload["optimizer"], payload["progress"])


def evaluation_copy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Write ``source``'s checkpoint without its critic and optimiser state (atomically): what playing,
    scoring and ``csr-marl evaluate`` read, small enough to keep in a repository. A curriculum
    (``init_from``) started from such a copy starts that role's critic afresh."""
    payload = _read(source)
    payload["critic"] = payload["optimizer"] = None
    return _write(payload, target)


class CheckpointPolicy:
    """A trained team as a policy: ``policy(decision) -> action``.

    ``greedy``: the most probable legal action; otherwise an action drawn from the policy's
    distribution with the core's ``policy`` random stream (so a seed still fixes the episode).
    The observation is the environment's (``uniform_spaces``), built from the running core, so the
    policy must be bound to the :class:`~csr_marl.sim.ContactCenter` it plays before its first
    decision: ``policy.bind(center)``. It pickles as its checkpoint path, scenario and mode.
    """

    def __init__(self, checkpoint: Checkpoint, scenario: Scenario, *, greedy: bool = True) -> None:
        layout = observation_layout(scenario)
        if layout_signature(layout) != checkpoint.layout:
            raise CheckpointError(_layout_mismatch(checkpoint, scenario, layout_signature(layout)))
        self.checkpoint = checkpoint
        self.scenario = scenario
        self.layout = layout
        self.encoder = ObservationEncoder(layout, scenario)
        self.greedy = greedy
        self.center: ContactCenter | None = None
        self.rng: np.random.Generator | None = None

    def bind(self, center: ContactCenter) -> None:
        """Play ``center`` from now on (call once per episode, before its first decision)."""
        self.center = center
        self.rng = center.streams["policy"]
        self.encoder.invalidate()

    def __call__(self, decision: Decision) -> int:
        if self.center is None:
            raise RuntimeError("CheckpointPolicy.bind(center) must be called before the first decision")
        self.encoder.invalidate()  # the core has moved since the last decision
        observation = self.encoder.observe(self.center, decision.staff, decision)
        roles_layout = self.layout.roles_layout[decision.role]
        mask = self.encoder.mask(roles_layout, decision).astype(bool)
        with torch.no_grad():
            logits = self.checkpoint.actor.run(torch.from_numpy(observation[None]))[0].numpy()[mask]
        legal = np.flatnonzero(mask)
        if self.greedy:
            return int(legal[np.argmax(logits)])
        assert self.rng is not None
        weights = np.exp(logits - logits.max())
        return int(legal[self.rng.choice(len(legal), p=weights / weights.sum())])

    def __reduce__(self) -> tuple[Any, ...]:
        return (load_checkpoint_policy, (self.checkpoint.path, self.scenario, self.greedy))


def load_checkpoint_policy(
    path: str | os.PathLike[str], scenario: Scenario | str | None = None, greedy: bool = True
) -> CheckpointPolicy:
    """The policy of the checkpoint at ``path``, for ``scenario`` (default: the one it was trained on).

    The scenario must give the same observation layout as the training one (same staffed roles, queue
    slots, text features and ticket bank facts); staffing levels, arrivals and rewards may differ.
    """
    checkpoint = load_checkpoint(path)
    if scenario is None:
        scn = checkpoint.scenario()
    elif isinstance(scenario, Scenario):
        scn = scenario
    else:
        scn = load_scenario(scenario)
    return CheckpointPolicy(checkpoint, scn, greedy=greedy)


def _layout_mismatch(checkpoint: Checkpoint, scenario: Scenario, signature: dict[str, list[str]]) -> str:
    trained = checkpoint.layout
    why = f"it was trained with the roles {sorted(trained)}, this scenario staffs {sorted(signature)}"
    if sorted(trained) == sorted(signature):
        role = next(r for r in signature if signature[r] != trained[r])
        mine, theirs = signature[role], trained[role]
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
        why = (
            f"the {role} observation differs from feature {first} on "
            f"({len(theirs)} features trained, {len(mine)} here)"
        )
    return (
        f"checkpoint {checkpoint.path} (trained on {checkpoint.config.scenario}) cannot play scenario "
        f"{scenario.name}: {why}"
    )
