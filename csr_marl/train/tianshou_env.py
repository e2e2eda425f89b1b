"""The contact center as Tianshou sees it: its ``PettingZooEnv`` over the AEC environment."""

from __future__ import annotations

from typing import Any

from tianshou.env import PettingZooEnv

from .. import envs
from ..config.scenario import Scenario
from ..sim.result import SimulationResult

EMPTY_EPISODES_ALLOWED = 100


class CenterTianshouEnv(PettingZooEnv):
    """Tianshou's PettingZoo adapter over ``csr_marl.env(scenario, uniform_spaces=True)``.

    Observations are ``{agent_id, obs, mask}`` for the agent whose decision is due; rewards are one
    value per agent (``possible_agents`` order). The core's result of every finished episode is kept
    in :attr:`finished` (team return and KPIs, as ``csr_marl.simulate`` reports them).
    """

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(envs.env(scenario, uniform_spaces=True))
        self.finished: list[SimulationResult] = []

    def reset(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        """A new episode; one in which nobody has anything to decide is skipped (it teaches nothing)."""
        for _ in range(EMPTY_EPISODES_ALLOWED):
            observation, info = super().reset(*args, **kwargs)
            if self.env.unwrapped.pending_decision is not None:
                return observation, info
            kwargs.pop("seed", None)  # the next episode's seed is drawn from this one's
        raise RuntimeError(f"{EMPTY_EPISODES_ALLOWED} episodes in a row without a decision: nothing to learn here")

    def step(self, action: Any) -> tuple[dict, list[float], bool, bool, dict]:
        observation, rewards, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            self.finished.append(self.env.unwrapped.center.result())
        return observation, rewards, terminated, truncated, info
