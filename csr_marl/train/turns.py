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

Semi-MDP discounting (``smdp_tau``): decisions are unevenly spaced in time -- a resolver may decide
again after seconds (a tool step) or after twenty minutes (an idle spell). With observations that
carry the simulation clock (``TianshouEnv(..., with_time=True)``), each turn gets its own discount
``gamma ** (dt / tau)``, dt the minutes until the agent's next decision, and :func:`discounted_gae`
replaces Tianshou's scalar-gamma GAE; a turn's own reward is not discounted within its interval.

The PPO / A2C losses and optimisation stay Tianshou's (:class:`AgentTurnsMixin`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch
from numba import njit
from tianshou.algorithm import A2C, PPO
from tianshou.data import Batch, ReplayBuffer, to_torch_as

SMDP_KEYS = ("dt", "discount")  # the fields agent_turns adds for semi-MDP discounting


def agent_turns(
    batch: Batch,
    indices: np.ndarray,
    edges: np.ndarray,
    column: Mapping[str, int],
    *,
    gamma: float = 1.0,
    smdp_tau: float | None = None,
) -> Batch:
    """``batch`` (``buffer[indices]``, whole episodes per sub-buffer in time order) as per-agent turns.

    ``edges`` are the buffer's sub-buffer edges (one per environment); ``column`` maps an agent name to
    its column of the reward vectors. Transitions of an episode still unfinished are dropped.
    Returns a batch in (episode, agent, time) order with scalar rewards. With ``smdp_tau`` (minutes;
    the observations must carry ``time``, the simulation clock), each turn also has ``dt``, the
    minutes to the agent's next decision (0 for its last), and ``discount`` = gamma ** (dt / tau).
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
    turns = Batch(
        obs=batch.obs[order],
        act=batch.act[order],
        rew=earned,
        terminated=last_turn,
        truncated=np.zeros_like(last_turn),
        done=last_turn,
        obs_next=batch.obs[np.where(last_turn, order, following)],
        info=Batch(),
    )
    if smdp_tau is not None:
        if "time" not in batch.obs:
            raise ValueError("smdp_tau needs the simulation clock in the observations: TianshouEnv(..., with_time=True)")
        clock = np.asarray(batch.obs.time, dtype=np.float64)
        dt = np.where(last_turn, 0.0, clock[following] - clock[order])
        turns.dt = dt
        turns.discount = gamma ** (dt / smdp_tau)
    return turns


@njit
def discounted_gae(
    rew: np.ndarray, v_s: np.ndarray, v_s_: np.ndarray, discount: np.ndarray, done: np.ndarray, gae_lambda: float
) -> np.ndarray:
    """GAE with a discount per transition: delta_t = r_t + d_t V(s'_t) - V(s_t), A_t = delta_t + d_t lambda A_t+1;
    both terms stop at ``done`` (the end of an agent's trajectory: ``v_s_`` is not used there)."""
    advantage = np.zeros(len(rew))
    running = 0.0
    for t in range(len(rew) - 1, -1, -1):
        if done[t]:
            running = rew[t] - v_s[t]
        else:
            running = rew[t] + discount[t] * v_s_[t] - v_s[t] + discount[t] * gae_lambda * running
        advantage[t] = running
    return advantage


class AgentTurnsMixin:
    """Put in front of a Tianshou on-policy algorithm: advantages are computed over each agent's turns.

    With ``smdp_tau``, returns and advantages come from :func:`discounted_gae` instead of Tianshou's
    GAE, in the fields its PPO / A2C update reads (``v_s``, ``returns``, ``adv``; ``return_scaling``
    as Tianshou does it).
    """

    def __init__(self, *, agent_columns: dict[str, int], smdp_tau: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[call-arg]
        self.agent_columns = agent_columns  # agent name -> its column of the reward vectors
        self.smdp_tau = smdp_tau

    def _preprocess_batch(self, batch: Any, buffer: ReplayBuffer, indices: np.ndarray) -> Any:
        if any(len(part) >= part.maxsize for part in getattr(buffer, "buffers", [buffer])):
            raise RuntimeError("the rollout filled the buffer: raise its size, or collect fewer episodes per update")
        turns = agent_turns(
            batch, indices, buffer.subbuffer_edges, self.agent_columns,
            gamma=self.gamma, smdp_tau=self.smdp_tau,  # type: ignore[attr-defined]
        )
        per_turn = ReplayBuffer(len(turns))  # Tianshou's GAE reads its episode ends; it takes no extra keys
        per_turn.set_batch(Batch({k: v for k, v in turns.items() if k not in SMDP_KEYS}))
        return super()._preprocess_batch(turns, per_turn, np.arange(len(turns)))  # type: ignore[misc]

    def _add_returns_and_advantages(self, batch: Any, buffer: ReplayBuffer, indices: np.ndarray) -> Any:
        if self.smdp_tau is None:
            return super()._add_returns_and_advantages(batch, buffer, indices)  # type: ignore[misc]
        critic: Any = self.critic  # type: ignore[attr-defined]
        v_s, v_s_ = [], []
        with torch.no_grad():
            for minibatch in batch.split(self.max_batchsize, shuffle=False, merge_last=True):  # type: ignore[attr-defined]
                v_s.append(critic(minibatch.obs))
                v_s_.append(critic(minibatch.obs_next))
        batch.v_s = torch.cat(v_s, dim=0).flatten()
        values, next_values = batch.v_s.cpu().numpy().astype(np.float64), torch.cat(v_s_).flatten().cpu().numpy().astype(np.float64)
        scale = np.sqrt(self.ret_rms.var + self._eps) if self.return_scaling else 1.0  # type: ignore[attr-defined]
        done = np.asarray(batch.done, dtype=np.bool_)
        advantages = discounted_gae(
            np.asarray(batch.rew, dtype=np.float64), values * scale, next_values * scale,
            np.asarray(batch.discount, dtype=np.float64), done, float(self.gae_lambda),  # type: ignore[attr-defined]
        )
        returns = advantages + values * scale
        if self.return_scaling:  # type: ignore[attr-defined]
            self.ret_rms.update(returns)  # type: ignore[attr-defined]
            returns = returns / scale
        batch.returns = to_torch_as(returns, batch.v_s)
        batch.adv = to_torch_as(advantages, batch.v_s)
        return batch


class TurnsPPO(AgentTurnsMixin, PPO):
    """Tianshou's PPO over per-agent turns."""


class TurnsA2C(AgentTurnsMixin, A2C):
    """Tianshou's A2C over per-agent turns."""
