"""Where every feature sits: observation layouts per role, the state layout, action layouts, spaces.

Built once per environment from the scenario (``K`` queue slots, ``D`` text features, the bank's ``F``
revealed-fact values). Vectors are laid out in blocks, each documented in the env card
(:mod:`csr_marl.envs`); :meth:`Layout.feature_names` names every position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from ..config.domain import (
    ALL_TOOLS,
    CATEGORIES,
    PRIORITIES,
    RESOLVER_WORK_TOOLS,
    ROLES,
    SPECIALIST_WORK_TOOLS,
    TIERS,
)
from ..config.scenario import Scenario
from ..config.tickets import TicketBank
from ..sim.decisions import ROLE_TOOLS, action_count, decode_triage

PHASES: tuple[str, ...] = ("triage", "pick", "work", "none")
WORK_TOOLS: tuple[str, ...] = tuple(
    t for t in ALL_TOOLS if t in RESOLVER_WORK_TOOLS or t in SPECIALIST_WORK_TOOLS
)
SLOT_ROLES = frozenset({"resolver", "escalation"})  # roles that choose among visible queue slots

# The floor block: the same for every agent at one moment.
FLOOR_NAMES: tuple[str, ...] = (
    "shift_elapsed",
    *(f"queue_{r}" for r in ROLES),
    *(f"load_{r}" for r in ROLES),
    *(f"staffed_{r}" for r in ROLES),
)
SLOT_WIDTH = 1 + len(PRIORITIES) + len(TIERS) + 1 + len(CATEGORIES)


class TicketBlock:
    """Offsets inside the ticket block (relative to its start).

    The part that never changes for a ticket (text, tier, declared labels) comes first, so it is
    computed once per ticket and copied in as one slice.
    """

    def __init__(self, text_features: int, fact_names: list[str]) -> None:
        self.present = 0
        self.static = 1
        self.static_size = text_features + len(TIERS) + len(CATEGORIES) + len(PRIORITIES)
        self.assigned_category = self.static + self.static_size
        self.assigned_priority = self.assigned_category + len(CATEGORIES)
        self.age = self.assigned_priority + len(PRIORITIES)
        self.returning = self.age + 1
        self.escalated = self.age + 2
        self.budget = self.age + 3
        self.sentiment = self.age + 4
        self.questions = self.age + 5
        self.facts = self.age + 6
        self.done = self.facts + len(fact_names)
        self.size = self.done + len(WORK_TOOLS)
        self.names = [
            "ticket_present",
            *(f"text_{i}" for i in range(text_features)),
            *(f"tier_{t}" for t in TIERS),
            *(f"declared_category_{c}" for c in CATEGORIES),
            *(f"declared_priority_{p}" for p in PRIORITIES),
            *(f"assigned_category_{c}" for c in CATEGORIES),
            *(f"assigned_priority_{p}" for p in PRIORITIES),
            "ticket_age", "returning", "escalated", "action_budget_used", "customer_sentiment",
            "questions_asked",
            *(f"fact_{name}" for name in fact_names),
            *(f"done_{tool}" for tool in WORK_TOOLS),
        ]
        assert len(self.names) == self.size
        self.text = range(self.static, self.static + text_features)


@dataclass(frozen=True)
class RoleLayout:
    """One role's observation vector and action space."""

    role: str
    size: int  # observation length
    floor: int  # where the role's own features start (after the role one-hot, with uniform spaces)
    phase: int
    ticket: int
    slots: int  # -1 for triage, which takes the inbox head and sees no slots
    core_actions: int  # the core's actions for the role (decisions.action_count)
    n_actions: int  # size of the Discrete space: core actions (+ padding) + the final no-op
    names: tuple[str, ...]
    low: np.ndarray

    @property
    def noop(self) -> int:
        return self.n_actions - 1


class Layout:
    """Observation, state and action layouts for one scenario."""

    def __init__(self, scenario: Scenario, bank: TicketBank, uniform: bool = False) -> None:
        self.uniform = uniform
        self.queue_slots = scenario.observation.queue_slots
        self.text_features = scenario.observation.text_features
        self.text_chars = scenario.observation.text_chars  # with text_features, how text_i is hashed
        self.fact_index = dict(bank.fact_encoding)
        fact_names = [f"{k}={v}" for (k, v), _ in sorted(self.fact_index.items(), key=lambda kv: kv[1])]
        self.ticket_block = TicketBlock(self.text_features, fact_names)
        self.roles = tuple(role for role in ROLES if scenario.staffing.peak(role) > 0)
        self.roles_prefix = len(ROLES) if uniform else 0
        own = {role: self._own_names(role) for role in self.roles}
        widest = max(len(names) for names in own.values())
        widest_actions = max(action_count(role, self.queue_slots) for role in self.roles)
        self.roles_layout: dict[str, RoleLayout] = {}
        for role in self.roles:
            names = own[role]
            if uniform:
                names = [f"role_{r}" for r in ROLES] + names + [f"pad_{i}" for i in range(widest - len(names))]
            core = action_count(role, self.queue_slots)
            base = self.roles_prefix
            self.roles_layout[role] = RoleLayout(
                role=role,
                size=len(names),
                floor=base,
                phase=base + len(FLOOR_NAMES),
                ticket=base + len(FLOOR_NAMES) + len(PHASES),
                slots=base + len(FLOOR_NAMES) + len(PHASES) + self.ticket_block.size
                if role in SLOT_ROLES else -1,
                core_actions=core,
                n_actions=(widest_actions if uniform else core) + 1,
                names=tuple(names),
                low=self._low(names),
            )
        self.state_names = self._state_names()
        self.state_low = self._low(self.state_names)
        self.state_ticket = len(FLOOR_NAMES) + len(ROLES) + len(PHASES)
        self.state_truth = self.state_ticket + self.ticket_block.size
        self.state_slots = {
            "resolver": self.state_truth + len(CATEGORIES) + len(PRIORITIES) + 1,
        }
        self.state_slots["escalation"] = self.state_slots["resolver"] + self.queue_slots * SLOT_WIDTH
        self.state_flow = self.state_slots["escalation"] + self.queue_slots * SLOT_WIDTH

    # --- names ----------------------------------------------------------------------------------
    def _own_names(self, role: str) -> list[str]:
        names = [*FLOOR_NAMES, *(f"phase_{p}" for p in PHASES), *self.ticket_block.names]
        if role in SLOT_ROLES:
            names += self.slot_names("slot")
        return names

    def slot_names(self, prefix: str) -> list[str]:
        names: list[str] = []
        for i in range(self.queue_slots):
            names += [
                f"{prefix}{i}_present",
                *(f"{prefix}{i}_priority_{p}" for p in PRIORITIES),
                *(f"{prefix}{i}_tier_{t}" for t in TIERS),
                f"{prefix}{i}_age",
                *(f"{prefix}{i}_category_{c}" for c in CATEGORIES),
            ]
        return names

    def _state_names(self) -> list[str]:
        return [
            *FLOOR_NAMES,
            *(f"pending_role_{r}" for r in ROLES),
            *(f"pending_phase_{p}" for p in PHASES),
            *(f"pending_{name}" for name in self.ticket_block.names),
            *(f"pending_true_category_{c}" for c in CATEGORIES),
            *(f"pending_true_priority_{p}" for p in PRIORITIES),
            "pending_needs_escalation",
            *self.slot_names("resolver_slot"),
            *self.slot_names("escalation_slot"),
            "arrived", "resolved", "abandoned", "closed_unresolved",
        ]

    def _low(self, names: list[str]) -> np.ndarray:
        text = {f"text_{i}" for i in range(self.text_features)}
        return np.array(
            [-1.0 if name.removeprefix("pending_") in text else 0.0 for name in names], dtype=np.float32
        )

    def feature_names(self, role: str) -> tuple[str, ...]:
        """The name of every position of ``role``'s observation vector."""
        return self.roles_layout[role].names

    def action_names(self, role: str) -> tuple[str, ...]:
        """What every action index of ``role`` means (padding with uniform spaces; the no-op last)."""
        layout = self.roles_layout[role]
        k = self.queue_slots
        if role == "triage":
            names = ["{}/{}->{}".format(*decode_triage(a)) for a in range(layout.core_actions)]
        else:
            names = [f"pick_slot_{i}" for i in range(k)] + list(ROLE_TOOLS[role])
        names += [f"pad_{i}" for i in range(layout.n_actions - 1 - len(names))]
        return tuple(names) + ("noop",)

    # --- spaces ---------------------------------------------------------------------------------
    def observation_space(self, role: str, flat: bool = False) -> spaces.Dict | spaces.Box:
        """A fresh observation space for one agent of ``role`` (call once per agent)."""
        layout = self.roles_layout[role]
        vector = spaces.Box(low=layout.low, high=np.ones(layout.size, np.float32), dtype=np.float32)
        if flat:
            return vector
        mask = spaces.Box(low=0, high=1, shape=(layout.n_actions,), dtype=np.int8)
        return spaces.Dict({"observation": vector, "action_mask": mask})

    def action_space(self, role: str) -> spaces.Discrete:
        return spaces.Discrete(self.roles_layout[role].n_actions)

    def state_space(self) -> spaces.Box:
        return spaces.Box(
            low=self.state_low, high=np.ones(len(self.state_names), np.float32), dtype=np.float32
        )
