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

import math
from typing import Final

import numpy as np

from ..config.scenario import Rewards
from ..sim.rewards import COMPONENTS

UNIT: Final = float(2**32)  # fixed-point units per reward point
_SCALE: Final = 1.0 / UNIT
_INDEX: Final = {name: i for i, name in enumerate(COMPONENTS)}
_N: Final = len(COMPONENTS)


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
        # The pool in reward points, float(pool[i]) * 2**-32, for the component vectors. Scaling by a
        # power of two is exact, so pool_points - mark_points is (float(pool) - float(mark)) * 2**-32
        # to the bit. Never changed in place (a change makes a new array), so a mark is a reference.
        self.pool_points = np.zeros(_N, np.float64)
        self.pool_sum = 0
        self.marks: dict[str, tuple[int, np.ndarray]] = {}  # pool (sum, points) at each agent's last turn
        self.own: dict[str, list[int]] = {}  # earned alone since the agent's last turn; [sum, *components]
        self.step_own: dict[str, list[int]] = {}
        self.begin_step()

    def begin_step(self) -> None:
        """Start a new step: the per-step view (``rewards`` in PettingZoo) starts from zero."""
        self.step_pool: list[int] | None = None  # what the team earned this step, once it earns anything
        self.step_pool_sum = 0
        if self.step_own:
            self.step_own = {}
        self._step_points: np.ndarray | None = None  # step_pool in points, once asked for

    def restart(self, agent: str) -> None:
        """``agent`` takes its turn: its reward since its last turn starts from zero."""
        self.marks[agent] = (self.pool_sum, self.pool_points)
        if self.own:
            self.own.pop(agent, None)

    def turn(self, agent: str) -> None:
        """A new step in which ``agent`` takes its turn: ``begin_step`` then ``restart``."""
        self.begin_step()
        self.restart(agent)

    def add(self, entries: list[tuple[str, str | None, float]]) -> None:
        """Book the core's ledger entries (component, agent or None, value)."""
        if not entries:
            return
        share = self.team_share
        pool, step_pool = self.pool, self.step_pool
        if step_pool is None:
            step_pool = self.step_pool = [0] * _N
        points = self.pool_points = self.pool_points.copy()  # marks keep the old one
        added = 0
        for component, agent, value in entries:
            i = _INDEX[component]
            team = total = units(value * UNIT)
            if agent is not None and share != 1.0:
                team = units(value * share * UNIT)
                alone = total - team
                if alone:
                    for book in (self.own, self.step_own):
                        mine = book.get(agent)
                        if mine is None:
                            mine = book[agent] = [0] * (_N + 1)
                        mine[0] = mine[0] + alone
                        mine[i + 1] = mine[i + 1] + alone
            pool[i] = pool[i] + team
            points[i] = pool[i] * _SCALE  # float(pool[i]) * 2**-32
            step_pool[i] = step_pool[i] + team
            added += team
        self.pool_sum += added
        self.step_pool_sum += added
        self._step_points = None

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
        values = self.pool_points.copy() if mark is None else self.pool_points - mark[1]
        return _plus_own(values, self.own.get(agent))

    def last_step_all(self, agents: list[str]) -> dict[str, float]:
        """``{agent: last_step(agent)}`` for ``agents``, in one pass (a parallel step's rewards)."""
        rewards = dict.fromkeys(agents, self.step_pool_sum / UNIT)
        for agent, own in self.step_own.items():
            if agent in rewards:
                rewards[agent] = (self.step_pool_sum + own[0]) / UNIT
        return rewards

    def step_points(self) -> np.ndarray:
        """What the team earned in the last step, per component, in reward points (shared: read only)."""
        if self._step_points is None:
            self._step_points = _NOTHING if self.step_pool is None else _points(self.step_pool)
        return self._step_points

    def last_step_components(self, agent: str) -> np.ndarray:
        values, own = self.step_points().copy(), self.step_own.get(agent)
        return values if own is None else _plus_own(values, own)


def units(x: float) -> int:
    """``round(x)``, the nearest integer with ties to even, as ``math.floor`` and float arithmetic (which
    the compiled build runs without a call into Python's ``round``). ``x - floor(x)`` is exact: below
    2**52 both are within a factor of two of each other, or ``floor(x)`` is 0 or -1, where a rounded
    ``x + 1`` errs only away from a tie; from 2**52 on every float is an integer."""
    low = math.floor(x)
    rest = x - low
    if rest > 0.5 or (rest == 0.5 and low & 1):
        return low + 1
    return low


def _plus_own(values: np.ndarray, own: list[int] | None) -> np.ndarray:
    """``values`` (a fresh array) plus what the agent earned alone, in reward points."""
    if own is not None:
        values += _points(own[1:])
    return values


def _points(units: list[int]) -> np.ndarray:
    """Fixed-point amounts in reward points (float(unit) * 2**-32; exact but for float64 rounding).

    Adding in points rounds as adding in units then scaling would: scaling by 2**-32 is exact.
    """
    return np.array([unit * _SCALE for unit in units], np.float64)  # float(unit), then scaled: the same


_NOTHING: Final = np.zeros(_N, np.float64)  # step_points of a step that earned nothing
_NOTHING.flags.writeable = False
