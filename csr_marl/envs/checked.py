"""``env()``'s checking layer: PettingZoo's two standard wrappers folded into one.

``pettingzoo.utils.wrappers.AssertOutOfBoundsWrapper`` inside ``OrderEnforcingWrapper`` is two layers
of ``BaseWrapper``, whose every attribute read (``agents``, ``agent_selection``, ``terminations``, ...)
walks a ``__getattr__`` chain: on this environment that cost more per AEC step than the observation.
:class:`CheckedAEC` is an ``OrderEnforcingWrapper`` (so PettingZoo's order-enforcing iterator and
``isinstance`` checks take it) that makes the same checks with the same errors -- the order checks
before ``reset()``, the warning for a step after the end, the out-of-bounds assertion -- but in one
layer, with the calls of an AEC loop (``agent_iter``, ``last``, ``step``) going straight to the
environment.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator


class CheckedAEC(OrderEnforcingWrapper):
    """``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(env))`` in one layer (see the module)."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._checked = env
        # Discrete spaces, fixed for the environment's life: an int is in bounds if start <= a < start + n.
        self._bounds = {
            agent: (int(space.start), int(space.start + space.n))
            for agent, space in ((a, env.action_space(a)) for a in env.possible_agents)
        }

    def step(self, action: Any) -> None:
        env = self._checked
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            agent = env.agent_selection
            low, high = self._bounds[agent]
            if type(action) is not int or not low <= action < high:
                # AssertOutOfBoundsWrapper's check, for everything but a plain int
                assert (action is None and (env.terminations[agent] or env.truncations[agent])) or (
                    env.action_space(agent).contains(action)
                ), "action is not in action space"
            env.step(action)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._has_reset:  # what reading agent_selection through the wrapper raises
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self._checked.last(observe)

    def __str__(self) -> str:
        return str(self.env)  # as PettingZoo's OrderEnforcingWrapper prints: the environment's name

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _CheckedIterable(self, max_iter)


class _CheckedIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> AECOrderEnforcingIterator:
        return _CheckedIterator(self.env, self.max_iter)


class _CheckedIterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing iterator, reading the environment without the wrapper's chain."""

    def __next__(self) -> str:
        wrapper = self.env
        env = wrapper._checked
        if not env.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return env.agent_selection
