"""From Tianshou's turn-by-turn rollouts to each agent's own decisions (a semi-MDP per agent).

Tianshou's ``PettingZooEnv`` records one transition per AEC step: the acting agent's observation and
action, and every agent's reward for that step. Its buffer order is the team's order, so the next
transition usually belongs to somebody else. Tianshou's own multi-agent dispatcher assumes
turn-based games, where it does not matter; here a resolver may act again only after forty other
decisions. So before the library computes advantages, :func:`agent_turns` rewrites a rollout of
whole episodes as each agent's sequence of decisions:

* the reward of an agent's decision is what that agent earned from it until its next decision (or
  the end of the shift) -- PettingZoo's cumulative reward at its next ``last()``;
* the next observation is the agent's own at its next decision;
* the agent's last decision of an episode ends its trajectory (the shift is over: terminal, since
  ``shift_elapsed`` is observed).

The advantages, PPO / A2C losses and optimisation stay Tianshou's (:class:`AgentTurnsMixin`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from tianshou.algorithm import A2C, PPO
from tianshou.data import Batch, ReplayBuffer


def agent_turns(
    batch: Batch, indices: np.ndarray, edges: np.ndarray, column: Mapping[str, int]
) -> Batch:
    """``batch`` (``buffer[indices]``, whole episodes per sub-buffer in time order) as per-agent turns.

    ``edges`` are the buffer's sub-buffer edges (one per environment); ``column`` maps an agent name to
    its column of the reward vectors. Transitions of an episode still unfinished are dropped.
    Returns a batch in (episode, agent, time) order with scalar rewards.
    """
    n = len(batch)
    done = np.logical_or(batch.terminated, batch.truncated)
    region = np.searchsorted(edges, indices, side="right") - 1
    starts = np.ones(n, dtype=bool)
    starts[1:] = done[:-1] | (region[1:] != region[:-1])
    episode = np.cumsum(starts) - 1
    ends = np.append(starts[1:], True)
    finished = np.zeros(episode[-1] + 1, dtype=bool)
    finished[episode[ends & done]] = True
    last_step = np.flatnonzero(ends)  # per episode, the position of its last step

    agent = np.array([column[name] for name in batch.obs.agent_id])
    order = np.lexsort((np.arange(n), agent, episode))
    order = order[finished[episode[order]]]
    ep, who = episode[order], agent[order]
    last_turn = np.append((ep[1:] != ep[:-1]) | (who[1:] != who[:-1]), True)
    following = np.append(order[1:], -1)
    until = np.where(last_turn, last_step[ep], following - 1)  # the turn's reward runs to here
    rewards = np.cumsum(np.asarray(batch.rew, dtype=np.float64), axis=0)
    before = np.where(order > 0, rewards[np.maximum(order - 1, 0), who], 0.0)
    earned = rewards[until, who] - before
    return Batch(
        obs=batch.obs[order],
        act=batch.act[order],
        rew=earned,
        terminated=last_turn,
        truncated=np.zeros_like(last_turn),
        done=last_turn,
        obs_next=batch.obs[np.where(last_turn, order, following)],
        info=Batch(),
    )


class AgentTurnsMixin:
    """Put in front of a Tianshou on-policy algorithm: advantages are computed over each agent's turns."""

    def __init__(self, *, agent_columns: dict[str, int], **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[call-arg]
        self.agent_columns = agent_columns  # agent name -> its column of the reward vectors

    def _preprocess_batch(self, batch: Any, buffer: ReplayBuffer, indices: np.ndarray) -> Any:
        if any(len(part) >= part.maxsize for part in getattr(buffer, "buffers", [buffer])):
            raise RuntimeError("the rollout filled the buffer: raise its size, or collect fewer episodes per update")
        turns = agent_turns(batch, indices, buffer.subbuffer_edges, self.agent_columns)
        per_turn = ReplayBuffer(len(turns))
        per_turn.set_batch(turns)
        return super()._preprocess_batch(turns, per_turn, np.arange(len(turns)))  # type: ignore[misc]


class TurnsPPO(AgentTurnsMixin, PPO):
    """Tianshou's PPO over per-agent turns."""


class TurnsA2C(AgentTurnsMixin, A2C):
    """Tianshou's A2C over per-agent turns."""
