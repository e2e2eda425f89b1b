"""The contact center as Tianshou sees it: its ``PettingZooEnv`` over the AEC environment, with every
reward credited to the agent that earned it.

Tianshou's ``PettingZooEnv`` records one transition per AEC turn and reads each agent's reward from
``env.rewards`` -- what the agent earned *during that one turn*. Its multi-agent dispatcher then gives
each learner the rewards of its own turns only: in a turn-based board game that is everything, but
here a resolver's resolution, the team's waiting cost and abandonments arrive while other agents act,
and a plain ``PettingZooEnv`` loses most of them (about 7 % of each agent's reward reached its learner
on ``standard_day``). :class:`TianshouEnv` fixes that on the environment side (``credit="turn"``):

* an agent's reward in its own transition is everything it earned since its previous transition
  (PettingZoo's cumulative reward, plus what its action earned at once);
* when the shift ends, each agent takes one last transition (only the no-op unmasked, the action is
  ignored: PettingZoo's dead step) that brings what it earned after its last decision; the episode is
  done after the last of them.

So the rewards that reach each learner add up to the agent's whole return. ``credit="step"`` keeps
Tianshou's plain per-turn vector (every agent's reward of each turn, no closing transitions) for
algorithms that regroup turns themselves, as the project's trainer does (:mod:`.turns`). Masks are
read from ``info["action_mask"]``, so any observation layout works.

Two extra entries of the observation dict, only when asked: ``with_state=True`` adds ``state``,
``env.state()`` at that decision (for a centralised critic), ``with_time=True`` adds ``time``, the
simulation clock in minutes (for semi-MDP discounting).

    from tianshou.env import DummyVectorEnv
    from csr_marl.train import TianshouEnv
    venv = DummyVectorEnv([lambda: TianshouEnv("standard_day") for _ in range(4)])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import AECEnv
from tianshou.env import PettingZooEnv

from .. import envs
from ..envs.common import ScenarioLike
from ..envs.views import AgentView
from ..sim.result import SimulationResult

EMPTY_EPISODES_ALLOWED = 100
CREDITS = ("turn", "step")


class TianshouEnv(PettingZooEnv):
    """Tianshou's ``PettingZooEnv`` over ``csr_marl.env(...)`` (or an AEC env you built).

    Observations are ``{agent_id, obs, mask}`` for the agent whose decision is due; rewards are one
    value per agent (``possible_agents`` order), credited as ``credit`` says (module docstring). The
    core's result of every finished episode is kept in :attr:`finished` (team return and KPIs, as
    ``csr_marl.simulate`` reports them). ``with_state`` / ``with_time`` add ``state`` / ``time`` to the
    observation dict (module docstring).
    """

    def __init__(
        self,
        env: AECEnv | ScenarioLike = "standard_day",
        *,
        credit: str = "turn",
        with_state: bool = False,
        with_time: bool = False,
        **options: Any,
    ) -> None:
        if credit not in CREDITS:
            raise ValueError(f"credit must be one of {CREDITS}, got {credit!r}")
        self.credit = credit
        self.with_state = with_state
        self.with_time = with_time
        self.finished: list[SimulationResult] = []
        self._owed = np.zeros(0)
        super().__init__(env if isinstance(env, AECEnv) else envs.env(env, **options))

    def reset(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        """A new episode; one in which nobody has anything to decide is skipped (it teaches nothing)."""
        for _ in range(EMPTY_EPISODES_ALLOWED):
            self.env.reset(*args, **kwargs)
            if self.env.unwrapped.pending_decision is not None:
                self._owed = np.zeros(len(self.env.possible_agents))
                self.rewards = [0.0] * len(self.env.possible_agents)
                observation, _, _, _, info = self.env.last()
                return self._observation(observation, info), info
            kwargs.pop("seed", None)  # the next episode's seed is drawn from this one's
        raise RuntimeError(f"{EMPTY_EPISODES_ALLOWED} episodes in a row without a decision: nothing to learn here")

    def step(self, action: Any) -> tuple[dict, list[float], bool, bool, dict]:
        env = self.env
        agent = env.agent_selection
        closing = env.terminations[agent] or env.truncations[agent]
        if closing:  # the agent's last transition: its dead step
            flags = (env.terminations[agent], env.truncations[agent])
            observation, _, _, _, info = env.last()
            last = self._observation(observation, info)
        env.step(None if closing else action)
        rewards = env.rewards  # once: each attribute read goes through PettingZoo's wrappers
        agents = env.possible_agents
        step_rewards = np.array(
            rewards.get_many(agents, 0.0) if type(rewards) is AgentView else [rewards.get(a, 0.0) for a in agents]
        )
        if not closing and env.unwrapped.pending_decision is None:
            self.finished.append(env.unwrapped.center.result())  # the shift ended in this step
        if self.credit == "step":  # Tianshou's own convention: done once the next agent is done
            self.rewards = step_rewards.tolist()
            observation, _, terminated, truncated, info = env.last()
            return self._observation(observation, info), self.rewards, terminated, truncated, info
        self._owed += step_rewards
        column = self.agent_idx[agent]  # Tianshou's own agent -> reward column
        credited = [0.0] * len(self._owed)
        credited[column], self._owed[column] = float(self._owed[column]), 0.0
        self.rewards = credited
        if closing and not env.agents:
            return last, self.rewards, flags[0], flags[1], {}
        observation, _, _, _, info = env.last()
        return self._observation(observation, info), self.rewards, False, False, info

    def _observation(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        vector = observation["observation"] if isinstance(observation, dict) else observation
        mask = np.asarray(info.get("action_mask", ()), dtype=bool).tolist()
        if not any(mask):  # a closing transition: only the no-op
            mask = [False] * (self.action_space.n - 1) + [True]
        out = {"agent_id": self.env.agent_selection, "obs": vector, "mask": mask}
        if self.with_state:
            out["state"] = self.env.unwrapped.state()
        if self.with_time:
            out["time"] = float(self.env.unwrapped.center.env.now)
        return out

