"""Learning-rate annealing by environment steps (Tianshou's linear schedule counts updates, which
vary here: rollouts are whole episodes of varying length)."""

from __future__ import annotations

from typing import Callable

import torch
from tianshou.algorithm.optim import LRSchedulerFactory
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
