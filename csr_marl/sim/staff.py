"""Staff members and their SimPy processes.

Each staff member is one process that loops: wait until on shift with work waiting, take a ticket
(triage takes the inbox head; resolvers and the desk choose one of the visible slots), then ask for
decisions and spend sampled tool time until the ticket leaves their hands. Every choice is a decision
request to the center (see :mod:`csr_marl.sim.decisions`), never a local rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generator

import simpy

from .decisions import ASKED, Phase, decode_triage
from .queues import TicketQueue
from .tickets import Ticket

if TYPE_CHECKING:
    from .center import ContactCenter


class Staff:
    """One agent slot: ``triage_0``, ``resolver_3``, ``escalation_0``..."""

    __slots__ = ("name", "role", "index", "queue", "ticket", "on_duty", "wake", "busy_since",
                 "last_decision", "activity")

    def __init__(self, role: str, index: int, queue: TicketQueue, on_duty: bool) -> None:
        self.name = f"{role}_{index}"
        self.role = role
        self.index = index
        self.queue = queue
        self.ticket: Ticket | None = None
        self.on_duty = on_duty
        self.wake: simpy.Event | None = None
        self.busy_since = 0.0
        self.last_decision = 0.0
        self.activity = "idle"  # what the floor shows: idle, off shift, a tool name

    def __repr__(self) -> str:
        return f"Staff({self.name}, {self.activity})"


Process = Generator[simpy.Event, object, None]
PICK_ACTIONS = [list(range(k)) for k in range(65)]  # legal pick actions for k visible tickets


def staff_process(center: "ContactCenter", staff: Staff) -> Process:
    env = center.env
    queue = staff.queue
    while True:
        while True:  # wait until on shift with a ticket waiting
            if staff.on_duty:
                if queue.next_deadline() <= env.now:
                    center.expire(queue)
                if queue.size:
                    break
                center.idle[staff.role].append(staff)
                staff.activity = "idle"
            else:
                staff.activity = "off shift"
            staff.wake = env.event()
            yield staff.wake
            staff.wake = None
        if staff.role == "triage":
            ticket = queue.head()
            assert ticket is not None
            center.start_service(staff, ticket)
            yield from _triage(center, staff, ticket)
        else:
            slots = queue.visible(center.queue_slots)
            ticket = center.ask(staff, Phase.PICK, PICK_ACTIONS[len(slots)], slots=slots)
            if ticket is ASKED:
                ticket = yield center.answer_event
            if ticket is None:  # decision epochs: the pick was withdrawn (queue emptied, or off shift)
                continue
            yield from _work(center, staff, ticket)  # type: ignore[arg-type]
        center.end_service(staff)


def _triage(center: "ContactCenter", staff: Staff, ticket: Ticket) -> Process:
    action = center.ask(staff, Phase.TRIAGE, center.legal_triage, ticket=ticket)
    if action is ASKED:
        action = yield center.answer_event
    category, priority, route = decode_triage(action)  # type: ignore[arg-type]
    center.score_triage(staff, ticket, category, priority, route)
    staff.activity = "triaging"
    yield center.env.timeout(center.triage_time())
    center.route_after_triage(ticket, category, priority, route)


def _work(center: "ContactCenter", staff: Staff, ticket: Ticket) -> Process:
    at_desk = staff.role == "escalation"
    while True:
        legal = center.legal_work(staff.role, ticket)
        action = center.ask(staff, Phase.WORK, legal, ticket=ticket)
        if action is ASKED:
            action = yield center.answer_event
        tool = center.tool_of(staff.role, action)  # type: ignore[arg-type]
        staff.activity = tool
        yield center.env.timeout(center.tool_time(tool, at_desk))
        ticket.actions += 1
        if center.apply_tool(staff, ticket, tool):
            return


def shift_process(center: "ContactCenter") -> Process:
    env = center.env
    for change in center.scenario.staffing.shifts:
        if change.at_minute <= 0:
            continue
        yield env.timeout(change.at_minute - env.now)
        for role in center.roles_present:
            headcount = getattr(change, role)
            if headcount is None:
                continue
            for staff in center.staff_by_role[role]:
                was = staff.on_duty
                staff.on_duty = staff.index < headcount
                if staff.on_duty and not was and staff.wake is not None and not staff.wake.triggered:
                    staff.wake.succeed()
