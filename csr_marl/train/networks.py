"""Actor and critic: one MLP per role, chosen by the role one-hot that starts every observation.

With ``uniform_spaces=True`` every agent's observation starts with ``role_triage, role_resolver,
role_escalation`` and every role has the same action count, so one module serves the whole team
while each role keeps its own weights (the roles read different features and choose among
different actions). All agents of a role share that role's weights.

A centralised critic (MAPPO-style, ``central_critic``) reads the observation followed by the
environment's global state (``env.state()`` at the decision, ``obs.state`` in the batch); the
actor never does, so a trained team still plays from its own observations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..config.domain import ROLES

MASKED_LOGIT = -1e9  # a forbidden action's logit: probability 0, entropy stays finite


def mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


class RoleMLP(nn.Module):
    """``x -> out`` with the MLP of each row's role (roles given by name, present in the scenario)."""

    def __init__(self, obs_size: int, out_size: int, roles: list[str], hidden: int) -> None:
        super().__init__()
        self.out_size = out_size
        self.roles = nn.ModuleDict({role: mlp(obs_size, out_size, hidden) for role in roles})
        self._role_index = {role: ROLES.index(role) for role in roles}

    def run(self, x: torch.Tensor) -> torch.Tensor:
        role = x[:, : len(ROLES)].argmax(dim=1)
        out = x.new_zeros((x.shape[0], self.out_size))
        for name, net in self.roles.items():
            rows = (role == self._role_index[name]).nonzero(as_tuple=True)[0]
            if len(rows):
                out = out.index_put((rows,), net(x[rows]))
        return out


def _tensor(values: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values), dtype=dtype)


class RoleActor(RoleMLP):
    """Masked logits from a Tianshou observation batch (``obs.obs`` vectors, ``obs.mask`` legal actions)."""

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        logits = self.run(_tensor(obs.obs, torch.float32))
        return logits.masked_fill(~_tensor(obs.mask, torch.bool), MASKED_LOGIT), state


class RoleCritic(RoleMLP):
    """Value of an observation batch, shape ``(batch, 1)``; with ``state_size`` > 0 it reads
    ``obs.obs`` followed by ``obs.state`` (a centralised critic)."""

    def __init__(self, obs_size: int, roles: list[str], hidden: int, state_size: int = 0) -> None:
        super().__init__(obs_size + state_size, 1, roles, hidden)
        self.state_size = state_size

    def forward(self, obs: Any, **kwargs: Any) -> torch.Tensor:
        x = _tensor(obs.obs, torch.float32)
        if self.state_size:
            x = torch.cat((x, _tensor(obs.state, torch.float32)), dim=1)
        return self.run(x)
