"""Staff members and their SimPy processes.

Each staff member is one process that loops: wait until on shift with work waiting, take a ticket
(triage takes the inbox head; resolvers and the desk choose one of the visible slots), then ask for
decisions and spend sampled tool time until the ticket leaves their hands. Every choice is a decision
request to the center (see :mod:`csr_marl.sim.decisions`), never a local rule.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any, Final, Generator, TYPE_CHECKING

import simpy
from simpy.events import NORMAL, PENDING

from .decisions import ASKED, ROLE_TOOLS, Decision, Phase, decode_triage
from .queues import TicketQueue
from .tickets import Ticket

if TYPE_CHECKING:
    from .center import ContactCenter


class Staff:
    """One agent slot: ``triage_0``, ``resolver_3``, ``escalation_0``..."""

    __slots__ = ("name", "role", "index", "queue", "ticket", "on_duty", "wake", "busy_since",
                 "last_decision", "activity", "decision", "answer")

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
        self.decision: Decision | None = None  # reused by the inline policy (ContactCenter.ask)
        self.answer: simpy.Event | None = None  # the event the process waits on for an answer (reused)

    def __repr__(self) -> str:
        return f"Staff({self.name}, {self.activity})"


Process = Generator[simpy.Event, Any, None]
PICK_ACTIONS: Final = [list(range(k)) for k in range(65)]  # legal pick actions for k visible tickets


def schedule(env: simpy.Environment, event: simpy.Event, delay: float = 0.0) -> None:
    """``env.schedule(event, NORMAL, delay)``: the same heap entry (time, priority, the next event id),
    so events run in the same order, without the interpreted call."""
    heappush(env._queue, (env._now + delay, NORMAL, next(env._eid), event))


def rearmed(event: simpy.Event) -> simpy.Event:
    """``event``, which SimPy has processed, made pending again for the one process that waits on it
    (a process's own event is processed before the process resumes and yields it again)."""
    event.callbacks = []
    event._value = PENDING
    return event


def trigger(env: simpy.Environment, event: simpy.Event, value: Any = None) -> None:
    """``event.succeed(value)``: the same check and the same heap entry, without the interpreted call."""
    if event._value is not PENDING:
        raise RuntimeError(f"{event} has already been triggered")
    event._ok = True
    event._value = value
    schedule(env, event)


def after(env: simpy.Environment, event: simpy.Event, delay: float) -> simpy.Event:
    """``env.timeout(delay)`` on ``event``, an event of the caller's that SimPy has processed (or a new
    one): the same heap entry as SimPy's ``Timeout`` makes, without making an event object, whose
    ``__init__`` is interpreted Python. Only for an event nobody else waits on: a staff process's own,
    yielded at once."""
    if delay < 0:
        raise ValueError(f"Negative delay {delay}")
    event.callbacks = []
    event._value = None
    event._ok = True
    schedule(env, event, delay)
    return event


def staff_process(center: "ContactCenter", staff: Staff) -> Process:
    """The staff member's whole working life as one generator (one frame per resumption): wait for
    work, take a ticket, then triage it or work it tool by tool until it leaves their hands."""
    env = center.env
    queue = staff.queue
    role = staff.role
    triage = role == "triage"
    at_desk = role == "escalation"
    tools = ROLE_TOOLS[role]
    first_tool = center.queue_slots  # action index of the role's first tool
    ask = center.ask
    tick = simpy.Event(env)  # this process's timeouts, one at a time (see after())
    wake = simpy.Event(env)  # what wakes it when work comes or its shift starts
    tool_time = center.tool_samplers(at_desk)  # tool -> its handle-time sampler
    idle = center.idle[role]
    pick_legal = PICK_ACTIONS
    may_abandon = center.may_abandon
    while True:
        while True:  # wait until on shift with a ticket waiting
            if staff.on_duty:
                if may_abandon and queue.next_deadline() <= env._now:
                    center.expire(queue)
                if queue.size:
                    break
                idle.append(staff)
                staff.activity = "idle"
            else:
                staff.activity = "off shift"
            staff.wake = rearmed(wake)
            yield wake
            staff.wake = None
        if triage:
            ticket = queue.head()
            assert ticket is not None
            center.start_service(staff, ticket)
            action = ask(staff, Phase.TRIAGE, center.legal_triage, ticket=ticket)
            if action is ASKED:
                action = yield center.answer_event  # type: ignore[misc]  # set while a decision is asked
            category, priority, route = decode_triage(action)
            center.score_triage(staff, ticket, category, priority, route)
            staff.activity = "triaging"
            yield after(env, tick, center.triage_time())
            center.route_after_triage(ticket, category, priority, route)
        else:
            slots = queue.visible(center.queue_slots)
            picked = ask(staff, Phase.PICK, pick_legal[len(slots)], slots=slots)
            if picked is ASKED:
                picked = yield center.answer_event  # type: ignore[misc]
            ticket = picked
            if ticket is None:  # decision epochs: the pick was withdrawn (queue emptied, or off shift)
                continue
            while True:  # work the ticket, one tool at a time, until it leaves the staff member's hands
                action = ask(staff, Phase.WORK, center.legal_work(role, ticket), ticket=ticket)
                if action is ASKED:
                    action = yield center.answer_event  # type: ignore[misc]
                tool = tools[action - first_tool]
                staff.activity = tool
                yield after(env, tick, tool_time[tool]())
                ticket.actions += 1
                if center.apply_tool(staff, ticket, tool):
                    break
        center.end_service(staff)


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
                if staff.on_duty and not was and staff.wake is not None and staff.wake._value is PENDING:
                    trigger(env, staff.wake)
