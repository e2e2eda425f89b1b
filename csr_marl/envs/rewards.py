"""Reward assignment: the core's reward entries turned into per-agent rewards by the reward mode.

The core records every component with the agent responsible (``None`` for team-wide ones: waiting,
abandonment). With ``team_share`` = 1 (``shared``), 0 (``individual``) or ``mixed_share`` (``mixed``):

* an entry of agent ``a`` gives ``team_share * value`` to every agent and ``(1 - team_share) * value``
  more to ``a``;
* a team-wide entry gives ``value`` to every agent.

A team reward reaches every agent at every step, yet a step must not touch every agent. So the account
keeps a running team pool and, per agent, only a mark of the pool at its last turn and what it earned
alone since: an agent's reward since its last turn is ``pool - mark + own``, read in O(1). Amounts are
kept as integers in units of 2**-32 so that this difference is exactly the sum of the per-step rewards
(PettingZoo's accumulated rewards must match ``last()`` to the bit); the rounding is below 1e-9.
"""

from __future__ import annotations

import numpy as np

from ..config.scenario import Rewards
from ..sim.rewards import COMPONENTS

UNIT = float(2**32)  # fixed-point units per reward point
_INDEX = {name: i for i, name in enumerate(COMPONENTS)}
_N = len(COMPONENTS)


def team_share(rewards: Rewards) -> float:
    """The part of an agent's own reward that goes to the whole team, by reward mode."""
    return {"shared": 1.0, "individual": 0.0, "mixed": rewards.mixed_share}[rewards.mode]


class RewardAccount:
    """Per-agent rewards, both per step and since each agent's last turn (AEC cumulative rewards)."""

    def __init__(self, rewards: Rewards) -> None:
        self.team_share = team_share(rewards)
        self.reset()

    def reset(self) -> None:
        self.pool = [0] * _N  # every agent's share, running total per component
        self.pool_sum = 0
        self.marks: dict[str, tuple[int, list[int]]] = {}  # pool (sum, components) at each agent's last turn
        self.own: dict[str, list[int]] = {}  # earned alone since the agent's last turn; [sum, *components]
        self.begin_step()

    def begin_step(self) -> None:
        """Start a new step: the per-step view (``rewards`` in PettingZoo) starts from zero."""
        self.step_pool = [0] * _N
        self.step_pool_sum = 0
        self.step_own: dict[str, list[int]] = {}

    def restart(self, agent: str) -> None:
        """``agent`` takes its turn: its reward since its last turn starts from zero."""
        self.marks[agent] = (self.pool_sum, self.pool.copy())
        self.own.pop(agent, None)

    def add(self, entries: list[tuple[str, str | None, float]]) -> None:
        """Book the core's ledger entries (component, agent or None, value)."""
        share = self.team_share
        pool, step_pool = self.pool, self.step_pool
        for component, agent, value in entries:
            i = _INDEX[component]
            total = round(value * UNIT)
            team = total if agent is None or share == 1.0 else round(value * share * UNIT)
            pool[i] += team
            step_pool[i] += team
            self.pool_sum += team
            self.step_pool_sum += team
            alone = total - team
            if alone:
                assert agent is not None
                for book in (self.own, self.step_own):
                    mine = book.get(agent)
                    if mine is None:
                        mine = book[agent] = [0] * (_N + 1)
                    mine[0] += alone
                    mine[i + 1] += alone

    # --- reading --------------------------------------------------------------------------------
    def since_turn(self, agent: str) -> float:
        """What ``agent`` earned since its last turn (PettingZoo's cumulative reward)."""
        mark = self.marks.get(agent)
        own = self.own.get(agent)
        return (self.pool_sum - (mark[0] if mark else 0) + (own[0] if own else 0)) / UNIT

    def last_step(self, agent: str) -> float:
        """What ``agent`` earned in the last step."""
        own = self.step_own.get(agent)
        return (self.step_pool_sum + (own[0] if own else 0)) / UNIT

    def since_turn_components(self, agent: str) -> np.ndarray:
        mark = self.marks.get(agent)
        if mark is None:
            values = np.array(self.pool, dtype=np.float64)
        else:
            values = np.subtract(self.pool, mark[1], dtype=np.float64)
        return _with_own(values, self.own.get(agent))

    def last_step_components(self, agent: str) -> np.ndarray:
        return _with_own(np.array(self.step_pool, dtype=np.float64), self.step_own.get(agent))


def _with_own(values: np.ndarray, own: list[int] | None) -> np.ndarray:
    """Add the agent's own amounts and convert to reward points (exact: all in 2**-32 units)."""
    if own is not None:
        values += own[1:]
    values *= 1.0 / UNIT
    return values
