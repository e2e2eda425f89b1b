"""The parallel environment: every agent whose decision is due acts in the same step.

By default (``decision_interval_minutes=None``) a step runs the core to the next minute at which a
decision is due, and every staff member whose decision is due at that minute acts: the same contact
center as the AEC environment (no decision waits). With ``decision_interval_minutes`` the core runs
in epochs of that length instead (a fixed grid from minute 0); every staff member whose decision fell
due meanwhile waits for the epoch's end, and then all of them act in the same step (more decisions per
step, at the cost of decision latency: see the env card). Steps hold at least one real decision. Agents with nothing to decide have only the no-op unmasked and
``info["decision_due"] == False``; their actions are ignored and may be left out of the actions dict.
Two picks of the same ticket in one step: the decision that fell due first gets it; the other takes
the first of its visible tickets still waiting (or, if none is, waits for work again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingzoo import ParallelEnv

from .common import DEFAULT_DECISION_INTERVAL, CenterEnvBase, ScenarioLike


class ContactCenterParallel(CenterEnvBase, ParallelEnv):
    """PettingZoo parallel environment over the contact-center core (see :mod:`csr_marl.envs`)."""

    def __init__(
        self,
        scenario: ScenarioLike = "standard_day",
        seed: int | None = None,
        render_mode: str | None = None,
        *,
        max_cycles: int | None = None,
        decision_interval_minutes: float | None = DEFAULT_DECISION_INTERVAL,
        **options: Any,
    ) -> None:
        if max_cycles is not None and (isinstance(max_cycles, bool) or not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive integer or None, got {max_cycles!r}")
        super().__init__(
            scenario, seed, render_mode, decision_interval_minutes=decision_interval_minutes, **options
        )
        self._ezpickle_kwargs["max_cycles"] = max_cycles  # copies keep the cap
        self.max_cycles = max_cycles
        self._observe_waiting = True  # RLlibEnv: False (it hands RLlib the deciding agents only)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._driver.start(seed, epochs=True)
        self._begin_episode()
        # An episode with nothing to decide (nobody ever needs a choice) is over at once.
        self.agents = self.possible_agents.copy() if not self._driver.ended else []
        # Every step but the last: nobody done. Copied at each step (a copy is cheaper than a new dict).
        self._running = dict.fromkeys(self.agents, False)
        return self._observations_and_infos()

    def step(self, actions: Mapping[str, Any]) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        driver = self._driver
        self._require_reset()
        if not self.agents:
            raise RuntimeError("the episode has ended: call reset()")
        step = driver.parallel_step(
            actions, self.agents, self._running, self.max_cycles, self._observe_waiting, self._history
        )
        if driver.ended:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return step

    def _observations_and_infos(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Every live agent's observation and info (:meth:`CenterDriver.parallel_view`)."""
        return self._driver.parallel_view(self.agents, self._observe_waiting)
