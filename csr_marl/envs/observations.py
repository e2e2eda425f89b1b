"""Observation, state and action-mask vectors, read from what staff can see in the core.

Observations use only the visible part of tickets (text, tier, declared and assigned labels, revealed
facts, steps done) and of the floor (queue lengths, staff load, the first K queue slots). The state
vector for centralised critics adds the pending ticket's hidden truth. Nothing here grows with the
number of agents or the length of a queue: the floor and each role's view of its queue are computed at
most once per step, and a ticket's text is hashed once (cached on ``ticket.cache``).
"""

from __future__ import annotations

import bisect
import math
import re
import zlib

import numpy as np

from ..config.domain import CATEGORIES, PRIORITIES, ROLES, TIERS
from ..config.scenario import Scenario
from ..sim.center import ContactCenter
from ..sim.decisions import Decision, Phase
from ..sim.staff import Staff
from ..sim.tickets import Ticket
from .layout import FLOOR_NAMES, PHASES, SLOT_WIDTH, WORK_TOOLS, Layout, RoleLayout

AGE_SCALE_MINUTES = 15.0  # a ticket's age maps to age / (age + 15): 0.5 after 15 minutes
QUEUE_SCALE = 10.0  # a queue length maps to n / (n + 10)
FLOW_SCALE = 100.0  # the state's flow counts map to n / (n + 100)

_CATEGORY = {c: i for i, c in enumerate(CATEGORIES)}
_PRIORITY = {p: i for i, p in enumerate(PRIORITIES)}
_TIER = {t: i for i, t in enumerate(TIERS)}
_ROLE = {r: i for i, r in enumerate(ROLES)}
_PHASE = {p: i for i, p in enumerate(PHASES)}
_WORK_TOOL = {t: i for i, t in enumerate(WORK_TOOLS)}
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+")
_TOKEN_CACHE_LIMIT = 200_000


def squash(x: float, scale: float) -> float:
    """Map ``x >= 0`` into [0, 1): ``x / (x + scale)``, one half at ``scale``."""
    return x / (x + scale)


class TextHasher:
    """Signed feature hashing of a ticket's words into ``n`` features, L2-normalised (values in [-1, 1]).

    Words are lower-cased; every number becomes the same token, so order ids and amounts do not
    scatter the vector. The hash is CRC-32, stable across processes (Python's ``hash`` is salted).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._slots: dict[str, tuple[int, float]] = {}

    def __call__(self, text: str) -> list[float]:
        slots = self._slots
        if len(slots) >= _TOKEN_CACHE_LIMIT:
            slots.clear()
        counts = [0.0] * self.n
        for word in _WORD.findall(text.lower()):
            index, sign = slots.get(word) or self._slot(word)
            counts[index] += sign
        norm = math.sqrt(sum(c * c for c in counts)) or 1.0
        return [c / norm for c in counts]

    def _slot(self, word: str) -> tuple[int, float]:
        h = zlib.crc32(b"0" if word[0].isdigit() else word.encode())
        slot = self._slots[word] = (h % self.n, 1.0 if h & 0x80000000 else -1.0)
        return slot


class ObservationEncoder:
    """Builds observation, state and mask vectors in the layout's order (see :mod:`csr_marl.envs`)."""

    def __init__(self, layout: Layout, scenario: Scenario) -> None:
        self.layout = layout
        self.block = layout.ticket_block
        self.hasher = TextHasher(layout.text_features)
        self.horizon = scenario.horizon_minutes
        self.peak = {role: scenario.staffing.peak(role) for role in ROLES}
        self.max_actions = scenario.workflow.max_actions_per_ticket
        self.slot_block = layout.queue_slots * SLOT_WIDTH
        # Headcount on shift changes only at shift times: per role, per shift interval.
        staffing = scenario.staffing
        self._shift_starts = [0.0] + [c.at_minute for c in staffing.shifts if c.at_minute > 0]
        self._on_duty = [[staffing.headcount_at(role, t) for role in ROLES] for t in self._shift_starts]
        self._staffed = [
            [on / self.peak[role] if self.peak[role] else 0.0 for role, on in zip(ROLES, counts)]
            for counts in self._on_duty
        ]
        self._floor: list[float] | None = None
        self._backgrounds: dict[str, np.ndarray] = {}

    def invalidate(self) -> None:
        """The core has moved on: recompute the floor and queue views when next asked."""
        self._floor = None
        self._backgrounds = {}

    # --- observations ---------------------------------------------------------------------------
    def observe(self, center: ContactCenter, staff: Staff, decision: Decision | None) -> np.ndarray:
        """``staff``'s observation; ``decision`` is its pending decision, if it is the one asked."""
        layout = self.layout.roles_layout[staff.role]
        vec = self._background(center, layout).copy()
        vec[layout.phase + (_PHASE[decision.phase.value] if decision is not None else _PHASE["none"])] = 1.0
        if staff.ticket is not None:
            self._fill_ticket(vec, layout.ticket, staff.ticket, center.now)
        if decision is not None and decision.phase is Phase.PICK:
            # The decision's slots are what its action indices refer to.
            vec[layout.slots:layout.slots + self.slot_block] = 0.0
            self._fill_slots(vec, layout.slots, decision.slots, center.now)
        return vec

    def mask(self, layout: RoleLayout, decision: Decision) -> np.ndarray:
        mask = np.zeros(layout.n_actions, dtype=np.int8)
        mask[decision.legal] = 1
        return mask

    def state(self, center: ContactCenter, decision: Decision | None) -> np.ndarray:
        layout = self.layout
        vec = np.zeros(len(layout.state_names), dtype=np.float32)
        vec[:len(FLOOR_NAMES)] = self.floor(center)
        phase = len(FLOOR_NAMES) + len(ROLES)
        if decision is None:
            vec[phase + _PHASE["none"]] = 1.0
        else:
            vec[len(FLOOR_NAMES) + _ROLE[decision.role]] = 1.0
            vec[phase + _PHASE[decision.phase.value]] = 1.0
            ticket = decision.staff.ticket
            if ticket is not None:
                self._fill_ticket(vec, layout.state_ticket, ticket, center.now)
                truth = layout.state_truth
                vec[truth + _CATEGORY[ticket.true_category]] = 1.0
                vec[truth + len(CATEGORIES) + _PRIORITY[ticket.true_priority]] = 1.0
                vec[truth + len(CATEGORIES) + len(PRIORITIES)] = float(ticket.requirement.needs_escalation)
        k = layout.queue_slots
        for role, offset in layout.state_slots.items():
            self._fill_slots(vec, offset, center.queues[role].visible(k), center.now)
        flow = center.flow
        for i, key in enumerate(("arrived", "resolved", "abandoned", "closed_unresolved")):
            vec[layout.state_flow + i] = squash(flow[key], FLOW_SCALE)
        return vec

    # --- blocks ---------------------------------------------------------------------------------
    def floor(self, center: ContactCenter) -> list[float]:
        """Shift elapsed, queue lengths, staff load and staffing per role (FLOOR_NAMES)."""
        if self._floor is None:
            now = center.now
            interval = bisect.bisect_right(self._shift_starts, now) - 1 if len(self._shift_starts) > 1 else 0
            on_duty = self._on_duty[interval]
            queues, busy = center.queues, center.busy_staff
            values = [min(now / self.horizon, 1.0)]
            values += [squash(queues[role].size, QUEUE_SCALE) for role in ROLES]
            values += [
                min(busy[role] / on, 1.0) if on else float(busy[role] > 0) for role, on in zip(ROLES, on_duty)
            ]
            values += self._staffed[interval]
            self._floor = values
        return self._floor

    def _background(self, center: ContactCenter, layout: RoleLayout) -> np.ndarray:
        """What every agent of the role sees alike now: role one-hot, floor, its queue's slots."""
        vec = self._backgrounds.get(layout.role)
        if vec is None:
            vec = np.zeros(layout.size, dtype=np.float32)
            if self.layout.uniform:
                vec[_ROLE[layout.role]] = 1.0
            vec[layout.floor:layout.floor + len(FLOOR_NAMES)] = self.floor(center)
            if layout.slots >= 0:
                visible = center.queues[layout.role].visible(self.layout.queue_slots)
                self._fill_slots(vec, layout.slots, visible, center.now)
            self._backgrounds[layout.role] = vec
        return vec

    def _fill_ticket(self, vec: np.ndarray, at: int, ticket: Ticket, now: float) -> None:
        b = self.block
        vec[at + b.present] = 1.0
        static = ticket.cache
        if not isinstance(static, np.ndarray) or static.shape[0] != b.static_size:
            static = ticket.cache = self._static(ticket)
        vec[at + b.static:at + b.static + b.static_size] = static
        vec[at + b.assigned_category + _CATEGORY[ticket.assigned_category]] = 1.0
        vec[at + b.assigned_priority + _PRIORITY[ticket.assigned_priority]] = 1.0
        vec[at + b.age] = squash(now - ticket.arrival, AGE_SCALE_MINUTES)
        vec[at + b.returning] = float(ticket.contact > 0)
        vec[at + b.escalated] = float(ticket.escalated)
        vec[at + b.budget] = min(ticket.actions / self.max_actions, 1.0)
        facts = self.layout.fact_index
        for pair in ticket.revealed.items():
            index = facts.get(pair)
            if index is not None:
                vec[at + b.facts + index] = 1.0
        for tool in ticket.done:
            vec[at + b.done + _WORK_TOOL[tool]] = 1.0

    def _static(self, ticket: Ticket) -> np.ndarray:
        """Text features, tier and declared labels: fixed for the ticket's life, computed once."""
        labels = [0.0] * (len(TIERS) + len(CATEGORIES) + len(PRIORITIES))
        labels[_TIER[ticket.tier]] = 1.0
        labels[len(TIERS) + _CATEGORY[ticket.declared_category]] = 1.0
        labels[len(TIERS) + len(CATEGORIES) + _PRIORITY[ticket.declared_priority]] = 1.0
        static = np.array(self.hasher(ticket.text) + labels, dtype=np.float32)
        static.flags.writeable = False
        return static

    def _fill_slots(self, vec: np.ndarray, at: int, tickets: list[Ticket], now: float) -> None:
        tier = 1 + len(PRIORITIES)
        age = tier + len(TIERS)
        for i, ticket in enumerate(tickets):
            s = at + i * SLOT_WIDTH
            vec[s] = 1.0
            vec[s + 1 + _PRIORITY[ticket.assigned_priority]] = 1.0
            vec[s + tier + _TIER[ticket.tier]] = 1.0
            vec[s + age] = squash(now - ticket.arrival, AGE_SCALE_MINUTES)
            vec[s + age + 1 + _CATEGORY[ticket.assigned_category]] = 1.0
