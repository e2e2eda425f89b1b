"""Curriculum: start a role's networks from a checkpoint trained on another task (``init_from``).

A triage trained on ``tasks/classify`` reads 116 features; on ``standard_day`` the same role reads
181 (``uniform_spaces`` pads every role to the widest). So weights are copied **by name**: each
column of the first layer goes to the feature of the same name (a feature the source never saw
gets a zero column, one it saw that is gone here is dropped), the hidden layers are copied as they
are (the widths must match), and each row of the output layer goes to the action of the same name
(padding actions, never legal, get zero rows). The text features are copied by name too, so the
source and the new task must hash the text alike (``observation.text_features`` and ``text_chars``).
On the observations of the new task, with every
feature the source did not have at 0, the copied actor gives the source's logits.

The critic is copied the same way, its inputs named as the observation followed by ``state:NAME``
for each global-state entry of a centralised critic; from a decentralised source, a centralised
critic starts with zero state columns (the source's values, until it learns to use the state).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from ..envs.layout import Layout
from .checkpoint import CheckpointError, load_checkpoint, observation_layout
from .networks import RoleActor, RoleCritic

VALUE = ("value",)


def critic_inputs(features: Sequence[str], state_names: Sequence[str], state_size: int) -> list[str]:
    """The names of a critic's inputs: the observation's, then the global state's (if it reads it)."""
    return [*features, *(f"state:{name}" for name in state_names[:state_size])] if state_size else list(features)


def init_role(role: str, source_path: str | Path, actor: RoleActor, critic: RoleCritic, layout: Layout) -> None:
    """Overwrite ``role``'s actor and critic with the checkpoint's, matched by feature and action name
    (the actor alone from an evaluation copy, which has no critic); ``layout`` is the observation layout
    of the networks being initialised."""
    if role not in actor.roles:
        raise CheckpointError(f"init_from: this scenario does not staff {role} (it staffs {sorted(actor.roles)})")
    source = load_checkpoint(source_path)
    if role not in source.layout:
        raise CheckpointError(
            f"init_from: checkpoint {source_path} has no {role} (it was trained with {sorted(source.layout)})"
        )
    features, actions, state_names = layout.feature_names(role), layout.action_names(role), layout.state_names
    source_layout = observation_layout(source.scenario())
    hashing = (source_layout.text_features, source_layout.text_chars), (layout.text_features, layout.text_chars)
    if hashing[0] != hashing[1]:  # text_i would name another bucket of n-grams: copying by name would mislead
        raise CheckpointError(
            f"init_from: checkpoint {source_path} hashes the text into {_hashing(*hashing[0])}, this scenario into "
            f"{_hashing(*hashing[1])}: set observation.text_features and observation.text_chars as the checkpoint's"
        )
    source_features = source.layout[role]
    copy_by_name(
        source.actor.roles[role], actor.roles[role], source_features, features,
        source_layout.action_names(role), actions, f"init_from[{role}] actor",
    )
    if source.critic is None:  # an evaluation copy: the critic starts afresh
        return
    copy_by_name(
        source.critic.roles[role], critic.roles[role],
        critic_inputs(source_features, source_layout.state_names, source.critic.state_size),
        critic_inputs(features, state_names, critic.state_size), VALUE, VALUE, f"init_from[{role}] critic",
    )


def _hashing(features: int, chars: tuple[int, int] | None) -> str:
    return f"{features} features of words" + (f" and character {chars[0]}-{chars[1]}-grams" if chars else "")


def copy_by_name(
    source: nn.Sequential,
    target: nn.Sequential,
    source_in: Sequence[str],
    target_in: Sequence[str],
    source_out: Sequence[str],
    target_out: Sequence[str],
    what: str,
) -> None:
    """Copy an MLP's weights into another with possibly other inputs and outputs, matched by name."""
    src = [m for m in source if isinstance(m, nn.Linear)]
    dst = [m for m in target if isinstance(m, nn.Linear)]
    widths = [m.out_features for m in src[:-1]], [m.out_features for m in dst[:-1]]
    if widths[0] != widths[1]:
        raise CheckpointError(f"{what}: the checkpoint's hidden layers are {widths[0]} wide, this run's {widths[1]}")
    if len(source_in) != src[0].in_features or len(target_in) != dst[0].in_features:
        raise CheckpointError(f"{what}: input names do not match the layer widths")
    shared_in = _pairs(source_in, target_in)
    shared_out = _pairs(source_out, target_out)
    if not shared_in[0] or not shared_out[0]:
        raise CheckpointError(f"{what}: no {'feature' if not shared_in[0] else 'action'} names in common")
    with torch.no_grad():
        first = torch.zeros_like(dst[0].weight)
        first[:, shared_in[1]] = src[0].weight[:, shared_in[0]]
        dst[0].weight.copy_(first)
        dst[0].bias.copy_(src[0].bias)
        for a, b in zip(src[1:-1], dst[1:-1]):
            b.weight.copy_(a.weight)
            b.bias.copy_(a.bias)
        weight, bias = torch.zeros_like(dst[-1].weight), torch.zeros_like(dst[-1].bias)
        weight[shared_out[1]] = src[-1].weight[shared_out[0]]
        bias[shared_out[1]] = src[-1].bias[shared_out[0]]
        dst[-1].weight.copy_(weight)
        dst[-1].bias.copy_(bias)


def _pairs(source: Sequence[str], target: Sequence[str]) -> tuple[list[int], list[int]]:
    """Indices (in source, in target) of the names both have."""
    where = {name: i for i, name in enumerate(source)}
    both = [(where[name], j) for j, name in enumerate(target) if name in where]
    return [i for i, _ in both], [j for _, j in both]
