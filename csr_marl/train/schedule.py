"""Learning rates: annealing by environment steps (Tianshou's linear schedule counts updates, which
vary here: rollouts are whole episodes of varying length), and a rate of its own for a role."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactory, ParamsType
from torch.optim.lr_scheduler import LambdaLR, LRScheduler


class LinearDecay(LRSchedulerFactory):
    """The learning rate falls linearly from its initial value to 0 at ``total_steps`` env steps."""

    def __init__(self, total_steps: int, steps_done: Callable[[], int]) -> None:
        self.total_steps = total_steps
        self.steps_done = steps_done

    def create_scheduler(self, optim: torch.optim.Optimizer) -> LRScheduler:
        return LambdaLR(optim, lr_lambda=self._factor)

    def _factor(self, _updates: int) -> float:
        return max(0.0, 1.0 - self.steps_done() / self.total_steps)


class RoleRates(AdamOptimizerFactory):
    """Adam whose parameters of ``modules[role]`` learn at ``lr * factors[role]`` (one parameter group
    per role named, one for every other parameter); a schedule scales every group alike."""

    def __init__(self, lr: float, modules: Mapping[str, torch.nn.Module], factors: Mapping[str, float]) -> None:
        super().__init__(lr=lr)
        self.groups = [(list(modules[role].parameters()), factor) for role, factor in factors.items() if role in modules]

    def _create_optimizer_for_params(self, params: ParamsType) -> torch.optim.Optimizer:
        params = list(params)
        given = {id(p) for p in params}
        own = [([p for p in group if id(p) in given], factor) for group, factor in self.groups]  # only what is trained
        named = {id(p) for group, _ in own for p in group}
        groups = [{"params": [p for p in params if id(p) not in named]}]
        groups += [{"params": group, "lr": self.lr * factor} for group, factor in own if group]
        return torch.optim.Adam(groups, lr=self.lr, betas=self.betas, eps=self.eps, weight_decay=self.weight_decay)
