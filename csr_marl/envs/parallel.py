"""The parallel environment: every live agent acts at every step (an epoch of one decision).

The core pauses at one decision at a time, and the next decision can depend on how this one is
answered (a resolver who picks a ticket takes it out of everyone else's view), so an epoch holds
exactly one real decision: the agent whose decision is due chooses; every other agent has only the
no-op unmasked. Rewards are what accrued during the step. A step costs O(number of agents) here,
because every agent receives an observation; the AEC API's steps do not grow with the team.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingzoo import ParallelEnv

from .common import CenterEnvBase, as_action


class ContactCenterParallel(CenterEnvBase, ParallelEnv):
    """PettingZoo parallel environment over the contact-center core (see :mod:`csr_marl.envs`)."""

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._driver.start(seed)
        self._begin_episode()
        # An episode with nothing to decide (nobody ever needs a choice) is over at once.
        self.agents = self.possible_agents.copy() if self._driver.decision is not None else []
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
        if driver.decision is None:
            raise RuntimeError("the episode has ended: call reset()")
        acting = driver.decision.agent
        if acting not in actions:
            raise ValueError(f"no action for {acting}, whose decision is due (actions: {sorted(actions)})")
        chosen = {}
        for agent, action in actions.items():
            if agent not in driver.role_of:
                raise ValueError(f"unknown agent {agent!r}")
            chosen[agent] = as_action(agent, action)
        for agent, index in chosen.items():
            if agent != acting:
                driver.wait(agent, index)
        driver.act(chosen[acting])
        self._history.append(chosen)
        agents = self.agents
        observations, infos = self._observations_and_infos()
        rewards = {agent: driver.account.last_step(agent) for agent in agents}
        ended = driver.decision is None
        terminations = dict.fromkeys(agents, ended and driver.ended_early)
        truncations = dict.fromkeys(agents, ended and not driver.ended_early)
        if ended:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def _observations_and_infos(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        driver = self._driver
        observations, infos = {}, {}
        for agent in self.agents:
            mask = driver.mask(agent, noop=True)
            observations[agent] = driver.observation(agent, mask)
            infos[agent] = driver.info(agent, mask, driver.account.last_step_components(agent))
        return observations, infos
