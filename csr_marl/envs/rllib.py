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
``decision_interval_minutes``, ...) and ``"mask_in_observation": True``, which makes every observation
``{"observations": Box, "action_mask": Box(0, 1)}``, the layout RLlib's action-masking module
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule``) reads:
RLlib's default PPO module ignores masks (``docs/envs/illegal-actions.md``). Needs ``ray[rllib]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from .parallel import ContactCenterParallel


class RLlibEnv(MultiAgentEnv):
    """``csr_marl.parallel_env(**config)`` for RLlib, observing only the agents that decide."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        options = dict(config or {})
        self.mask_in_observation = bool(options.pop("mask_in_observation", False))
        self.par_env = ContactCenterParallel(**options)
        self.par_env._observe_waiting = False  # the waiting agents' no-op samples: RLlib gets the deciding ones
        self.possible_agents = list(self.par_env.possible_agents)
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: self._space(a) for a in self.possible_agents}
        self.action_spaces = {a: self.par_env.action_space(a) for a in self.possible_agents}

    def _space(self, agent: str) -> gymnasium.spaces.Space:
        space = self.par_env.observation_space(agent)
        if not self.mask_in_observation:
            return space
        if not isinstance(space, gymnasium.spaces.Box):
            raise ValueError("mask_in_observation needs flat observations: leave flat_observations=True")
        n = int(self.par_env.action_space(agent).n)
        return gymnasium.spaces.Dict(
            {"observations": space, "action_mask": gymnasium.spaces.Box(0.0, 1.0, (n,), np.float32)}
        )

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
                {a: self._observed(observations, infos, a) for a in observations}, rewards,
                {**terminations, "__all__": any(terminations.values())},
                {**truncations, "__all__": any(truncations.values())},
                infos,
            )
        observations, infos = self._deciding(observations, infos)
        return observations, rewards, {"__all__": False}, {"__all__": False}, infos

    def _deciding(self, observations: dict[str, Any], infos: dict[str, Any]) -> tuple[dict, dict]:
        due = self.par_env.due_decisions
        return {a: self._observed(observations, infos, a) for a in due}, {a: infos[a] for a in due}

    def _observed(self, observations: dict[str, Any], infos: dict[str, Any], agent: str) -> Any:
        if not self.mask_in_observation:
            return observations[agent]
        mask = infos[agent]["action_mask"].astype(np.float32)
        return {"observations": observations[agent], "action_mask": mask}

    def render(self) -> str | None:
        return self.par_env.render()

    def close(self) -> None:
        self.par_env.close()

    @property
    def center(self) -> Any:
        """The running core (its KPIs and ``result()`` once the episode has ended)."""
        return self.par_env.center
