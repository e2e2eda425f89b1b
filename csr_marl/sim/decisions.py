"""Decision requests: what a staff member must decide now, and the action layout of each role.

A staff member that needs a decision pauses the simulation with a :class:`Decision`; whoever drives the
center (the built-in policy loop or the PettingZoo adapter) answers it with an integer action.

Action layout per role (``K`` = ``observation.queue_slots``):

* triage: ``(category * 4 + priority) * 2 + route`` over CATEGORIES x PRIORITIES x ROUTES (32 actions);
* resolver: ``0..K-1`` pick a visible queue slot, then ``K + i`` for ``RESOLVER_TOOLS[i]``;
* escalation: ``0..K-1`` pick a slot of the escalation queue, then ``K + i`` for ``SPECIALIST_TOOLS[i]``.
"""

from __future__ import annotations

import enum
from typing import Any, Final

import numpy as np

from ..config.domain import CATEGORIES, PRIORITIES, RESOLVER_TOOLS, ROUTES, SPECIALIST_TOOLS
from .tickets import Ticket

ASKED: Final = object()  # what ContactCenter.ask returns when the simulation pauses for a decision
N_TRIAGE_ACTIONS: Final = len(CATEGORIES) * len(PRIORITIES) * len(ROUTES)
ROLE_TOOLS: Final[dict[str, tuple[str, ...]]] = {
    "triage": (),
    "resolver": RESOLVER_TOOLS,
    "escalation": SPECIALIST_TOOLS,
}


class Phase(str, enum.Enum):
    TRIAGE = "triage"  # a ticket in hand to classify, prioritise and route
    PICK = "pick"  # idle with tickets waiting: choose one of the visible slots
    WORK = "work"  # a ticket in hand: choose the next tool


def action_count(role: str, queue_slots: int) -> int:
    """Size of the role's discrete action space."""
    if role == "triage":
        return N_TRIAGE_ACTIONS
    return queue_slots + len(ROLE_TOOLS[role])


def encode_triage(category: str, priority: str, route: str) -> int:
    return (CATEGORIES.index(category) * len(PRIORITIES) + PRIORITIES.index(priority)) * len(
        ROUTES
    ) + ROUTES.index(route)


def decode_triage(action: int) -> tuple[str, str, str]:
    route = action % len(ROUTES)
    rest = action // len(ROUTES)
    return CATEGORIES[rest // len(PRIORITIES)], PRIORITIES[rest % len(PRIORITIES)], ROUTES[route]


class Decision:
    """A pending decision. ``legal`` lists the action indices the core accepts now.

    A plain class, not a dataclass: compiled, a dataclass's ``__init__`` is the one the dataclasses
    module writes at import, Python run by the interpreter, and the core makes a decision every step.
    Decisions compare by identity.
    """

    __slots__ = ("staff", "phase", "time", "legal", "ticket", "slots", "queue_slots", "event")

    def __init__(
        self, staff: Any, phase: Phase, time: float, legal: list[int], ticket: Ticket | None = None,
        slots: list[Ticket] | None = None, queue_slots: int = 5, event: Any = None,
    ) -> None:
        self.staff: Any = staff  # the Staff asking (staff.py imports this module, so it is not named)
        self.phase = phase
        self.time = time
        self.legal = legal
        self.ticket = ticket
        self.slots: list[Ticket] = [] if slots is None else slots
        self.queue_slots = queue_slots
        self.event: Any = event  # the SimPy event the staff member's process waits on for the answer

    def __repr__(self) -> str:
        return (
            f"Decision(staff={self.staff!r}, phase={self.phase!r}, time={self.time!r}, legal={self.legal!r}, "
            f"ticket={self.ticket!r}, slots={self.slots!r}, queue_slots={self.queue_slots!r}, event={self.event!r})"
        )

    @property
    def agent(self) -> str:
        return self.staff.name

    @property
    def role(self) -> str:
        return self.staff.role

    @property
    def n_actions(self) -> int:
        return action_count(self.staff.role, self.queue_slots)

    def allows(self, action: int) -> bool:
        """``action in self.legal``, read off a set kept per legal list: the core hands out the same
        few lists again and again and never changes one (the entry holds the list, so its id is not
        reused)."""
        legal = self.legal
        entry = _LEGAL_SETS.get(id(legal))
        if entry is None or entry[0] is not legal:
            if len(_LEGAL_SETS) >= _LEGAL_SETS_LIMIT:
                _LEGAL_SETS.clear()
            entry = _LEGAL_SETS[id(legal)] = (legal, frozenset(legal))
        return action in entry[1]

    def mask(self) -> np.ndarray:
        """int8 vector over the role's actions, 1 where legal."""
        mask = np.zeros(self.n_actions, dtype=np.int8)
        mask[self.legal] = 1
        return mask

    def tool(self, action: int) -> str:
        """The tool an action in the WORK phase stands for."""
        return ROLE_TOOLS[self.staff.role][action - self.queue_slots]

    def tool_action(self, tool: str) -> int:
        """The action index of ``tool`` for this role."""
        return self.queue_slots + _TOOL_INDEX[self.staff.role][tool]

    def fallback(self) -> int:
        """What the staff member does when the answer is unusable (an illegal action, if not strict).

        Triage passes the customer's own category and priority to the resolver queue (as a floor
        without triage staff does); a pick takes the next ticket in service order (slot 0); work
        answers the customer (``respond_user``).
        """
        if self.phase is Phase.TRIAGE:
            assert self.ticket is not None
            return encode_triage(self.ticket.declared_category, self.ticket.declared_priority, "resolver")
        if self.phase is Phase.PICK:
            return 0
        return self.tool_action("respond_user")

    def describe(self, action: int) -> str:
        if self.phase is Phase.TRIAGE:
            return "triage as {}/{} -> {}".format(*decode_triage(action))
        if self.phase is Phase.PICK or action < self.queue_slots:
            return f"pick slot {action}"
        return self.tool(action)


_LEGAL_SETS: Final[dict[int, tuple[list[int], frozenset[int]]]] = {}
_LEGAL_SETS_LIMIT: Final = 4096
_TOOL_INDEX: Final = {role: {tool: i for i, tool in enumerate(tools)} for role, tools in ROLE_TOOLS.items()}


class IllegalActionError(ValueError):
    """An action the current decision does not allow."""
