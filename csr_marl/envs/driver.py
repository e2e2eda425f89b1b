"""The core as both APIs see it: one ContactCenter episode, its pending decision, seeds, actions.

The driver never simulates anything itself: it asks the core for the next decision, answers it, and
books the core's reward entries into the reward account. The AEC and parallel environments are thin
layers over it that differ only in how they present turns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.domain import ROLES
from ..config.loading import load_ticket_bank
from ..config.scenario import Scenario
from ..sim.center import ContactCenter
from ..sim.decisions import Decision, IllegalActionError
from ..sim.staff import Staff
from .layout import Layout
from .observations import ObservationEncoder
from .rewards import RewardAccount


def agent_names(scenario: Scenario) -> list[str]:
    """One agent per staff slot at peak staffing, in role order (the core's staff names)."""
    return [f"{role}_{i}" for role in ROLES for i in range(scenario.staffing.peak(role))]


class CenterDriver:
    def __init__(
        self,
        scenario: Scenario,
        *,
        uniform_spaces: bool = False,
        flat_observations: bool = False,
        seed: int | None = None,
    ) -> None:
        self.scenario = scenario
        self.flat = flat_observations
        self.layout = Layout(scenario, load_ticket_bank(scenario.tickets.bank), uniform_spaces)
        self.agents = agent_names(scenario)
        self.role_of = {agent: agent.rsplit("_", 1)[0] for agent in self.agents}
        self._core_actions = {role: rl.core_actions for role, rl in self.layout.roles_layout.items()}
        self.encoder = ObservationEncoder(self.layout, scenario)
        self.account = RewardAccount(scenario.rewards)
        self.illegal_penalty = scenario.rewards.illegal_action
        self.center: ContactCenter | None = None
        self.decision: Decision | None = None
        self.staff: dict[str, Staff] = {}
        self.last_decided: dict[str, float] = {}
        self.version = 0  # counts moves of the core, for caches
        self._first_seed = seed
        self._seeds: np.random.Generator | None = None
        self.episode_seed: int | None = None
        self._mask = np.zeros(0, np.int8)  # the pending decision's mask, for self._mask_version
        self._mask_version = -1

    # --- episodes -------------------------------------------------------------------------------
    def start(self, seed: int | None = None) -> None:
        """A new episode. ``seed`` seeds the core's streams exactly as ``simulate(seed=...)`` does;
        without one, the episode's seed is drawn from the last seed given (or the constructor's)."""
        if seed is None:
            seed = self._next_seed()
        else:
            self._seeds = np.random.default_rng(seed)
        self.episode_seed = seed
        self.center = ContactCenter(self.scenario, seed, track_rewards=True)
        self.staff = {staff.name: staff for staff in self.center.staff}
        self.account.reset()
        self.last_decided = {}
        # Rewards accrued before the first decision stay in the ledger and reach the first step
        # (PettingZoo starts every episode with zero rewards).
        self.decision = self.center.next_decision()
        self.encoder.invalidate()
        self.version += 1

    def _next_seed(self) -> int:
        if self._seeds is None:
            if self._first_seed is not None:
                self._seeds = np.random.default_rng(self._first_seed)
                return self._first_seed
            self._seeds = np.random.default_rng()
        return int(self._seeds.integers(2**63))

    @property
    def ended(self) -> bool:
        return self.decision is None

    @property
    def ended_early(self) -> bool:
        """The episode ended before the horizon (``max_tickets`` reached, every ticket closed)."""
        center = self.center
        return center is not None and center.end_time is not None and center.end_time < center.horizon

    # --- acting ---------------------------------------------------------------------------------
    def act(self, action: Any) -> None:
        """The agent whose decision is due takes its turn: answer, then run the core to the next one.

        The step's rewards start from zero, and so does the acting agent's reward since its last turn.
        An action the core would refuse raises :class:`IllegalActionError` before anything changes,
        or, if the scenario sets ``rewards.illegal_action``, costs that penalty and leaves the same
        decision pending.
        """
        decision, center = self.decision, self.center
        assert decision is not None and center is not None
        staff = decision.staff
        index = int(action)
        in_core = 0 <= index < self._core_actions[staff.role]
        if not (in_core and index in decision.legal) and self.illegal_penalty is None:
            layout = self.layout.roles_layout[staff.role]
            raise IllegalActionError(_why_illegal(decision, layout.core_actions, layout.noop, index))
        agent, account = staff.name, self.account
        account.turn(agent)
        if in_core:
            center.decide(index)  # the core books the penalty for an illegal index itself
        else:
            self.penalise(agent)
        if center.pending is None:
            self.last_decided[agent] = decision.time
        self.decision = center.next_decision()
        # The core has moved: book its rewards, and what agents see is to be computed again.
        account.add(center.rewards.drain())
        self.encoder.invalidate()
        self.version += 1

    def wait(self, agent: str, action: Any) -> None:
        """A waiting agent's action in the parallel API: the no-op, else illegal (raise or penalty)."""
        noop = self.layout.roles_layout[self.role_of[agent]].noop
        if int(action) == noop:
            return
        if self.illegal_penalty is None:
            raise IllegalActionError(
                f"{agent} has nothing to decide now: only the no-op ({noop}) is legal, got {int(action)}"
            )
        self.penalise(agent)

    def penalise(self, agent: str) -> None:
        """Book the illegal-action penalty for an action the core never sees (no-op, padding)."""
        assert self.center is not None and self.illegal_penalty is not None
        self.center.rewards.add("illegal_action", self.illegal_penalty, agent)

    # --- what agents see ------------------------------------------------------------------------
    def mask(self, agent: str, noop: bool) -> np.ndarray:
        """The agent's action mask: its decision's legal actions, else nothing (AEC) or the no-op."""
        decision = self.decision
        if decision is not None and decision.staff.name == agent:
            if self._mask_version != self.version:
                self._mask = self.encoder.mask(self.layout.roles_layout[decision.staff.role], decision)
                self._mask_version = self.version
            return self._mask
        return self.encoder.idle_mask(self.role_of[agent], noop)

    def observation(self, agent: str, mask: np.ndarray) -> dict[str, np.ndarray] | np.ndarray:
        """The agent's observation: the vector, with its mask unless observations are flat."""
        assert self.center is not None
        decision = self.decision
        if decision is not None and decision.staff.name != agent:
            decision = None
        vector = self.encoder.observe(self.center, self.staff[agent], decision)
        return vector if self.flat else {"observation": vector, "action_mask": mask}

    def info(self, agent: str, mask: np.ndarray, components: np.ndarray) -> dict[str, Any]:
        assert self.center is not None
        now = self.center.env.now
        return {
            "action_mask": mask,
            "sim_time": now,
            "time_since_last_decision": now - self.last_decided.get(agent, 0.0),
            "reward_components": components,
        }

    def state(self) -> np.ndarray:
        assert self.center is not None
        return self.encoder.state(self.center, self.decision)


def _why_illegal(decision: Decision, core_actions: int, noop: int, index: int) -> str:
    if 0 <= index < core_actions:
        what = f"{decision.describe(index)!r}, not legal now"
    elif index == noop:
        what = "the no-op, which only agents with nothing to decide take (parallel API)"
    elif 0 <= index < noop:
        what = "padding (uniform_spaces)"
    else:
        what = f"outside the action space (0..{noop})"
    return f"{decision.agent} ({decision.phase.value}): action {index} is {what}; legal actions: {decision.legal}"
