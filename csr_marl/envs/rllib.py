"""The parallel environment as an RLlib ``MultiAgentEnv`` in which only agents with a decision act.

PettingZoo's parallel API asks every live agent for an action at every step, so on ``standard_day``
about two thirds of the samples a library collects are forced no-ops. RLlib's multi-agent episodes
need not: an agent that is absent from a step's observations takes no action there, and a reward it
receives meanwhile is added to its next transition (RLlib's "hanging" rewards). :class:`RLlibEnv`
therefore returns observations only for the agents whose decision is due (``info["decision_due"]``),
and every agent's reward of every step: the same decision epochs, the same dynamics and returns as
``csr_marl.parallel_env`` (with the same seed and actions), and no forced no-ops. At the end of the
episode every agent gets its final observation, so each one's trajectory closes.

    from ray.tune.registry import register_env
    from csr_marl.envs.rllib import RLlibEnv
    register_env("csr_marl", lambda config: RLlibEnv(config))
    config = PPOConfig().environment("csr_marl", env_config={"scenario": "standard_day"})

``env_config`` takes ``csr_marl.parallel_env``'s arguments (``scenario``, ``seed``, ``overrides``,
``decision_interval_minutes``, ...). Needs ``ray[rllib]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.rllib.env.multi_agent_env import MultiAgentEnv

from .parallel import ContactCenterParallel


class RLlibEnv(MultiAgentEnv):
    """``csr_marl.parallel_env(**config)`` for RLlib, observing only the agents that decide."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.par_env = ContactCenterParallel(**dict(config or {}))
        self.possible_agents = list(self.par_env.possible_agents)
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: self.par_env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: self.par_env.action_space(a) for a in self.possible_agents}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.par_env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        return self._deciding(observations, infos)

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.par_env.step(action_dict)
        ended = not self.par_env.agents
        if ended:  # every trajectory closes with the agent's final observation
            self.agents = []
            return (
                observations, rewards,
                {**terminations, "__all__": any(terminations.values())},
                {**truncations, "__all__": any(truncations.values())},
                infos,
            )
        observations, infos = self._deciding(observations, infos)
        return observations, rewards, {"__all__": False}, {"__all__": False}, infos

    def _deciding(self, observations: dict[str, Any], infos: dict[str, Any]) -> tuple[dict, dict]:
        due = self.par_env.due_decisions
        return {a: observations[a] for a in due}, {a: infos[a] for a in due}

    def render(self) -> str | None:
        return self.par_env.render()

    def close(self) -> None:
        self.par_env.close()

    @property
    def center(self) -> Any:
        """The running core (its KPIs and ``result()`` once the episode has ended)."""
        return self.par_env.center
