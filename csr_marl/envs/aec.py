"""The AEC environment: the agent whose decision is due acts; the core runs between decisions."""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import AECEnv

from .common import CenterEnvBase, as_action
from .views import AgentView


class ContactCenterAEC(CenterEnvBase, AECEnv):
    """PettingZoo AEC environment over the contact-center core (see :mod:`csr_marl.envs`)."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        driver = self._driver
        driver.start(seed)
        self._begin_episode()
        self.agents = self.possible_agents.copy()
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.rewards = AgentView(self.agents, driver.account.last_step, driver)
        self._cumulative_rewards = AgentView(self.agents, driver.account.since_turn, driver)
        self.infos = AgentView(self.agents, driver.turn_info, driver)
        self._select()

    def step(self, action: Any) -> None:
        driver = self._driver
        if driver.center is None:
            self._require_reset()
        if not self.agents:
            raise RuntimeError("the episode has ended: call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._dead_step(agent, action)
            self._history.append(None)
            return
        index = action if type(action) is int else as_action(agent, action)
        following = driver.act(index)  # moves the driver's version: what wrappers wrote into the views is dropped
        self._history.append(index)
        if following is not None:
            self.agent_selection = following
        else:
            self._select()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray] | np.ndarray:
        driver = self._driver
        if driver.center is None:
            self._require_reset()
        return driver.observation(agent, None if driver.flat else driver.mask(agent, False))

    def _select(self) -> None:
        """Point at the agent whose decision is due; at the end, everyone is done at once."""
        driver = self._driver
        if driver.decision is not None:
            self.agent_selection = driver.decision.agent
            return
        done = self.terminations if driver.ended_early else self.truncations
        for agent in self.agents:
            done[agent] = True
        self.agent_selection = self.agents[0]

    def _dead_step(self, agent: str, action: Any) -> None:
        """PettingZoo's dead-step convention: each done agent steps once with None and leaves."""
        if action is not None:
            raise ValueError(f"{agent} is done: the only valid action is None")
        for flags in (self.terminations, self.truncations, self.rewards, self._cumulative_rewards, self.infos):
            del flags[agent]
        self.agents.remove(agent)
        self._driver.account.begin_step()  # the step's rewards are cleared
        if self.agents:
            self.agent_selection = self.agents[0]
