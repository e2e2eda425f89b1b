"""Observation, state and action-mask vectors, read from what staff can see in the core.

Observations use only the visible part of tickets (text, tier, declared and assigned labels, revealed
facts, steps done) and of the floor (queue lengths, staff load, the first K queue slots). The state
vector for centralised critics adds the pending ticket's hidden truth. Nothing here grows with the
number of agents or the length of a queue: the floor and each role's view of its queue are computed at
most once per step, and a ticket's text is hashed once (cached on ``ticket.cache``).

Vectors are assembled from blocks that are already float32 bytes (``struct``'s ``f`` stores a Python
float exactly as numpy's float32 cast does): one-hot blocks come from tables built once, a ticket's
fixed features and its revealed facts and steps done are packed when they change (on ``ticket.cache``),
the floor and the queue slots once per step; a vector is then one join and one ``np.frombuffer``, a
fresh writable array every call. Per step that is a few packs of the values that move with the clock
(ages, the floor) instead of a numpy call per entry.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from typing import Final

import numpy as np

from ..config.domain import CATEGORIES, PRIORITIES, ROLES, TIERS
from ..config.scenario import Scenario
from ..sim.center import ContactCenter
from ..sim.decisions import Decision, Phase
from ..sim.staff import Staff
from ..sim.tickets import Ticket
from .layout import FLOOR_NAMES, PHASES, SLOT_WIDTH, WORK_TOOLS, Layout, RoleLayout
from .text_hashing import TextHasher
from .ticket_features import TicketFeatures

AGE_SCALE_MINUTES: Final = 15.0  # a ticket's age maps to age / (age + 15): 0.5 after 15 minutes
QUEUE_SCALE: Final = 10.0  # a queue length maps to n / (n + 10)
FLOW_SCALE: Final = 100.0  # the state's flow counts map to n / (n + 100)

# Waiting samples are handed out as rows of blocks of this many, made at once (see waiting_block).
WAITING_BLOCK_ROWS: Final = 32
_CATEGORY: Final = {c: i for i, c in enumerate(CATEGORIES)}
_PRIORITY: Final = {p: i for i, p in enumerate(PRIORITIES)}
_TIER: Final = {t: i for i, t in enumerate(TIERS)}
_ROLE: Final = {r: i for i, r in enumerate(ROLES)}
_PHASE: Final = {p: i for i, p in enumerate(PHASES)}
_WORK_TOOL: Final = {t: i for i, t in enumerate(WORK_TOOLS)}
_MASK_CACHE_LIMIT: Final = 4096
_FLOAT32: Final = struct.Struct("f")
_F32: Final = np.dtype(np.float32)
_SIX: Final = struct.Struct("6f")
QUESTION_SCALE: Final = 3.0  # questions asked map to min(n / 3, 1)
_ONE: Final = _FLOAT32.pack(1.0)
_TRIAGE: Final = ROLES[0]
_RESOLVER: Final = ROLES[1]
_ESCALATION: Final = ROLES[2]


def squash(x: float, scale: float) -> float:
    """Map ``x >= 0`` into [0, 1): ``x / (x + scale)``, one half at ``scale``."""
    return x / (x + scale)


def packed(values: Sequence[float]) -> bytes:
    """The float32 bytes of ``values``, as a float32 numpy array holds them."""
    return struct.pack(f"{len(values)}f", *values)


def one_hot(n: int, i: int) -> bytes:
    values = [0.0] * n
    values[i] = 1.0
    return packed(values)


def zeros(n: int) -> bytes:
    return bytes(4 * n)  # +0.0 in float32 is four zero bytes


def as_vector(parts: Sequence[bytes]) -> np.ndarray:
    """A fresh, writable float32 vector of the concatenated blocks."""
    return np.frombuffer(bytearray().join(parts), _F32)


class _Block:
    """A packed block and the encoder's version it is of (-1: none yet), updated in place."""

    def __init__(self) -> None:
        self.version = -1
        self.data = b""


class ObservationEncoder:
    """Builds observation, state and mask vectors in the layout's order (see :mod:`csr_marl.envs`)."""

    def __init__(self, layout: Layout, scenario: Scenario) -> None:
        self.layout = layout
        self.block = layout.ticket_block
        self.hasher = TextHasher(layout.text_features, scenario.observation.text_chars)
        self.horizon = scenario.horizon_minutes
        self.peak = {role: scenario.staffing.peak(role) for role in ROLES}
        self.max_actions = scenario.workflow.max_actions_per_ticket
        self.slot_block = layout.queue_slots * SLOT_WIDTH
        self._static_size = self.block.static_size
        # Headcount on shift changes only at shift times: per role, per shift interval.
        staffing = scenario.staffing
        self._shift_starts = [0.0] + [c.at_minute for c in staffing.shifts if c.at_minute > 0]
        self._on_duty = [[staffing.headcount_at(role, t) for role in ROLES] for t in self._shift_starts]
        self._staffed = [
            [on / self.peak[role] if self.peak[role] else 0.0 for role, on in zip(ROLES, counts)]
            for counts in self._on_duty
        ]
        self._floor_pack = struct.Struct(f"{len(FLOOR_NAMES)}f").pack
        self._tables()
        self._version = 0  # moves of the core seen (invalidate); the caches below hold for one version
        self._floor_version = -1
        self._floor = b""
        self._queue_slots: dict[str, _Block] = {}  # per role, updated in place
        self._masks: dict[str, dict[int, tuple[list[int], np.ndarray]]] = {r: {} for r in layout.roles_layout}

    def _tables(self) -> None:
        """Every block that takes few values, packed once."""
        layout, block = self.layout, self.block
        self._phase_bytes = {phase.value: one_hot(len(PHASES), _PHASE[phase.value]) for phase in Phase}
        self._no_phase = one_hot(len(PHASES), _PHASE["none"])
        self._labels = {  # tier, declared category, declared priority (the end of the fixed features)
            t: {
                c: {p: one_hot(len(TIERS), i) + one_hot(len(CATEGORIES), j) + one_hot(len(PRIORITIES), k)
                    for p, k in _PRIORITY.items()}
                for c, j in _CATEGORY.items()
            }
            for t, i in _TIER.items()
        }
        self._assigned = {
            c: {p: one_hot(len(CATEGORIES), i) + one_hot(len(PRIORITIES), j) for p, j in _PRIORITY.items()}
            for c, i in _CATEGORY.items()
        }
        # A queue slot: present, priority one-hot, tier one-hot | age | category one-hot.
        self._slot_head = {
            p: {t: _ONE + one_hot(len(PRIORITIES), i) + one_hot(len(TIERS), j) for t, j in _TIER.items()}
            for p, i in _PRIORITY.items()
        }
        self._slot_tail = {c: one_hot(len(CATEGORIES), i) for c, i in _CATEGORY.items()}
        self._no_ticket = zeros(block.size)
        self._no_dynamic = zeros(block.size - block.facts)
        # k visible tickets, each (present, priority, tier) | age | category, then zeros for the rest
        head_size, tail_size = 4 * (1 + len(PRIORITIES) + len(TIERS)), 4 * len(CATEGORIES)
        empty = 4 * SLOT_WIDTH
        self._slot_packs = [
            struct.Struct("=" + f"{head_size}sf{tail_size}s" * k + f"{empty * (layout.queue_slots - k)}x").pack
            for k in range(layout.queue_slots + 1)
        ]
        self._roles: dict[str, tuple[bytes, bytes, bool]] = {}  # role -> (prefix, padding, sees slots)
        for role, rl in layout.roles_layout.items():
            prefix = one_hot(len(ROLES), _ROLE[role]) if layout.uniform else b""
            own = len(FLOOR_NAMES) + len(PHASES) + block.size + (self.slot_block if rl.slots >= 0 else 0)
            self._roles[role] = (prefix, zeros(rl.size - rl.floor - own), rl.slots >= 0)
        self._idle_masks = {  # roles' masks with nothing to decide: (without, with) the no-op
            role: tuple(np.zeros(rl.n_actions, dtype=np.int8) for _ in range(2))
            for role, rl in layout.roles_layout.items()
        }
        for role, (_, with_noop) in self._idle_masks.items():
            with_noop[layout.roles_layout[role].noop] = 1
        # What a parallel step shows an agent with nothing to decide: its role, phase "none", zeros.
        self._waiting = {
            role: as_vector([prefix, zeros(len(FLOOR_NAMES)), self._no_phase, self._no_ticket,
                             zeros(self.slot_block if slots else 0), padding])
            for role, (prefix, padding, slots) in self._roles.items()
        }
        self._waiting_rows: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {role: [] for role in self._roles}
        self._state_roles = {role: one_hot(len(ROLES), i) for role, i in _ROLE.items()}
        self._no_role = zeros(len(ROLES))
        self._no_truth = zeros(len(CATEGORIES) + len(PRIORITIES) + 1)

    def invalidate(self) -> None:
        """The core has moved on: recompute the floor and queue views when next asked."""
        self._version += 1

    # --- observations ---------------------------------------------------------------------------
    def observe(self, center: ContactCenter, staff: Staff, decision: Decision | None) -> np.ndarray:
        """``staff``'s observation; ``decision`` is its pending decision, if it is the one asked."""
        role = staff.role
        prefix, padding, slots = self._roles[role]
        now = center.env._now
        parts = [
            prefix,
            self.floor(center),
            self._no_phase if decision is None else self._phase_bytes[decision.phase._value_],
        ]
        ticket = staff.ticket
        if ticket is None:
            parts.append(self._no_ticket)
        else:
            self._ticket_parts(parts, ticket, now)
        if slots:
            if decision is not None and decision.phase is Phase.PICK:
                # The decision's slots are what its action indices refer to.
                parts.append(self._slots(decision.slots, now))
            else:
                parts.append(self._queue_view(center, role))
        parts.append(padding)
        return as_vector(parts)

    def mask(self, layout: RoleLayout, decision: Decision) -> np.ndarray:
        """The decision's legal actions (a fresh array).

        The core hands out the same few ``legal`` lists again and again and never changes one, so
        masks are kept per list (the entry holds the list, so its id is not reused).
        """
        legal = decision.legal
        masks = self._masks[layout.role]
        entry = masks.get(id(legal))
        if entry is None or entry[0] is not legal:
            if len(masks) >= _MASK_CACHE_LIMIT:
                masks.clear()
            mask = np.zeros(layout.n_actions, np.int8)
            mask[legal] = 1
            entry = masks[id(legal)] = (legal, mask)
        return entry[1].copy()

    def waiting_observation(self, role: str) -> np.ndarray:
        """A parallel step's observation for an agent of ``role`` with nothing to decide (a fresh
        array): the role one-hot, phase ``none`` and zeros. Its action is ignored, so the vector
        is not worth computing; the env card says why (a no-op sample, to be dropped)."""
        return self._waiting[role].copy()

    def waiting_rows(self, role: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """The role's waiting pairs (:meth:`waiting_observation`, the no-op mask) made and not yet
        handed out: a caller pops one per waiting agent and refills the list with
        :meth:`waiting_block` when it is empty (the parallel view, ``CenterDriver.parallel_view``)."""
        return self._waiting_rows[role]

    def waiting_block(self, role: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """``WAITING_BLOCK_ROWS`` new waiting pairs of the role: fresh, writable arrays.

        A parallel step hands one to every agent with nothing to decide, a dozen a step in
        ``standard_day``, so they are made ``WAITING_BLOCK_ROWS`` at a time: each array is a row of a
        block filled at once, with memory of its own (writing into one changes no other sample and no
        constant), for less than a copy each (compiled, about 1,250 instructions against 1,750). A
        row keeps its block alive: at most ``WAITING_BLOCK_ROWS`` rows' worth (a few kilobytes) for one
        sample kept.
        """
        vector, mask = self._waiting[role], self._idle_masks[role][1]
        vectors = np.empty((WAITING_BLOCK_ROWS, vector.size), vector.dtype)
        vectors[...] = vector
        masks = np.empty((WAITING_BLOCK_ROWS, mask.size), mask.dtype)
        masks[...] = mask
        return list(zip(vectors, masks))

    def idle_mask(self, role: str, noop: bool) -> np.ndarray:
        """Nothing to decide: no action (AEC) or only the no-op (parallel API); a fresh array."""
        return self._idle_masks[role][noop].copy()

    def state(self, center: ContactCenter, decision: Decision | None) -> np.ndarray:
        now = center.env.now
        parts = [self.floor(center)]
        ticket = None
        if decision is None:
            parts += (self._no_role, self._no_phase)
        else:
            parts += (self._state_roles[decision.role], self._phase_bytes[decision.phase._value_])
            ticket = decision.staff.ticket
        if ticket is None:
            parts += (self._no_ticket, self._no_truth)
        else:
            self._ticket_parts(parts, ticket, now)
            parts.append(one_hot(len(CATEGORIES), _CATEGORY[ticket.true_category]))
            parts.append(one_hot(len(PRIORITIES), _PRIORITY[ticket.true_priority]))
            parts.append(_FLOAT32.pack(float(ticket.requirement.needs_escalation)))
        k = self.layout.queue_slots
        for role in self.layout.state_slots:
            parts.append(self._slots(center.queues[role].visible(k), now))
        flow = center.flow
        parts.append(packed([
            squash(flow[key], FLOW_SCALE) for key in ("arrived", "resolved", "abandoned", "closed_unresolved")
        ]))
        return as_vector(parts)

    # --- blocks ---------------------------------------------------------------------------------
    def floor(self, center: ContactCenter) -> bytes:
        """Shift elapsed, queue lengths, staff load and staffing per role (FLOOR_NAMES), packed."""
        if self._floor_version == self._version:
            return self._floor
        now = center.env._now
        starts = self._shift_starts
        interval = bisect.bisect_right(starts, now) - 1 if len(starts) > 1 else 0
        on_t, on_r, on_e = self._on_duty[interval]
        staffed_t, staffed_r, staffed_e = self._staffed[interval]
        queues, busy = center.queues, center.busy_staff
        n_t, n_r, n_e = queues[_TRIAGE].size, queues[_RESOLVER].size, queues[_ESCALATION].size
        b_t, b_r, b_e = busy[_TRIAGE], busy[_RESOLVER], busy[_ESCALATION]
        elapsed = now / self.horizon
        # load: min(busy / on duty, 1.0), or whether anybody is busy when nobody is on duty
        load_t = b_t / on_t if on_t else float(b_t > 0)
        load_r = b_r / on_r if on_r else float(b_r > 0)
        load_e = b_e / on_e if on_e else float(b_e > 0)
        floor = self._floor_pack(
            1.0 if elapsed > 1.0 else elapsed,  # min(elapsed, 1.0)
            n_t / (n_t + QUEUE_SCALE),  # squash(waiting, QUEUE_SCALE)
            n_r / (n_r + QUEUE_SCALE),
            n_e / (n_e + QUEUE_SCALE),
            1.0 if load_t > 1.0 else load_t,
            1.0 if load_r > 1.0 else load_r,
            1.0 if load_e > 1.0 else load_e,
            staffed_t,
            staffed_r,
            staffed_e,
        )
        self._floor, self._floor_version = floor, self._version
        return floor

    def _queue_view(self, center: ContactCenter, role: str) -> bytes:
        """The role's queue slots as every agent of the role sees them now."""
        cached = self._queue_slots.get(role)
        if cached is None:
            cached = self._queue_slots[role] = _Block()
        elif cached.version == self._version:
            return cached.data
        view = cached.data = self._slots(center.queues[role].visible(self.layout.queue_slots), center.env._now)
        cached.version = self._version
        return view

    def _ticket_parts(self, parts: list[bytes], ticket: Ticket, now: float) -> None:
        """Append the ticket block."""
        features = ticket.cache
        if type(features) is not TicketFeatures or len(features) != self._static_size:
            features = ticket.cache = self._features(ticket)
        revealed, done = ticket.revealed, ticket.done
        if features.dynamic_key != (len(revealed), len(done)):
            self._facts_and_steps(features, revealed, done)
        age = now - ticket.arrival
        if not age > 0.0:  # max(0.0, age): float sums may leave -1e-17
            age = 0.0
        budget = ticket.actions / self.max_actions
        questions = len(ticket.questions) / QUESTION_SCALE
        parts += (
            features.head,
            self._assigned[ticket.assigned_category][ticket.assigned_priority],
            _SIX.pack(
                age / (age + AGE_SCALE_MINUTES),  # ticket_age, returning, escalated, action_budget_used
                1.0 if ticket.contact > 0 else 0.0,
                1.0 if ticket.escalated else 0.0,
                1.0 if budget > 1.0 else budget,  # min(budget, 1.0)
                0.5 + 0.5 * ticket.sentiment,  # customer_sentiment: 0 furious, 0.5 neutral, 1 pleased
                questions if questions <= 1.0 else 1.0,  # questions_asked = min(questions, 1.0)
            ),
            features.dynamic,
        )

    def _features(self, ticket: Ticket) -> TicketFeatures:
        """Text features, tier and declared labels: fixed for the ticket's life, computed once."""
        static = self.hasher.packed(ticket.text) + (
            self._labels[ticket.tier][ticket.declared_category][ticket.declared_priority]
        )
        features = TicketFeatures(len(static) // 4, np.float32, static)  # read-only: over bytes
        features.head = _ONE + static
        features.dynamic_key = (0, 0)
        features.dynamic = self._no_dynamic
        return features

    def _facts_and_steps(self, features: TicketFeatures, revealed: dict[str, str], done: tuple[str, ...]) -> None:
        """Pack the revealed (fact, value) one-hots, then the work tools done."""
        facts = self.layout.fact_index
        values = bytearray(self._no_dynamic)
        for pair in revealed.items():
            index = facts.get(pair)
            if index is not None:
                values[4 * index:4 * index + 4] = _ONE
        at = 4 * (self.block.done - self.block.facts)
        for tool in done:
            i = at + 4 * _WORK_TOOL[tool]
            values[i:i + 4] = _ONE
        features.dynamic = bytes(values)
        features.dynamic_key = (len(revealed), len(done))

    def _slots(self, tickets: list[Ticket], now: float) -> bytes:
        """The slot block for ``tickets`` (at most K), empty slots zero."""
        head, tail = self._slot_head, self._slot_tail
        args: list[bytes | float] = []
        for ticket in tickets:
            age = now - ticket.arrival
            if not age > 0.0:  # max(0.0, age): float sums may leave -1e-17
                age = 0.0
            args += (head[ticket.assigned_priority][ticket.tier], age / (age + AGE_SCALE_MINUTES),
                     tail[ticket.assigned_category])
        return self._slot_packs[len(tickets)](*args)
