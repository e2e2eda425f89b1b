"""A pending decision as a language model reads it: who you are, the clock, the ticket, what to do.

Only what staff can see is shown: the ticket as the customer wrote it (their name is in it), their
tier, the labels the customer and triage gave, how long they have waited, what the tools revealed and
the steps done, the conversation so far, and for a pick the waiting tickets. Hidden facts and true
labels never appear.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config.scenario import clock_time
from ..sim.center import ContactCenter
from ..sim.decisions import Decision, Phase
from ..sim.tickets import Ticket, amount_on_record

ROLE_BRIEF = {
    "triage": "You work triage at a customer-support contact center: read each new ticket, set its "
    "category and priority, and route it to the resolvers or to the escalation desk.",
    "resolver": "You are a resolver at a customer-support contact center: take tickets from your "
    "queue and work them with your tools until you can answer the customer.",
    "escalation": "You work the escalation desk of a customer-support contact center: specialists "
    "take the tickets resolvers cannot settle.",
}
TASK = {
    Phase.TRIAGE: "Classify this ticket with the classify tool.",
    Phase.PICK: "Pick the ticket you will work on next with the pick_ticket tool.",
    Phase.WORK: "Choose your next step: one tool call.",
}
SHOWN_FOR_PICK = 10


@dataclass(frozen=True)
class TicketView:
    """A ticket as staff see it, field by field: what :func:`describe` writes as text.

    The names follow what users of the seeds' environments look for (``ticket_id``,
    ``customer_name``, ``tier``, ``subject``, ``body``, the declared labels, the conversation).
    """

    ticket_id: int
    customer_name: str
    tier: str
    subject: str
    body: str
    declared_category: str
    declared_priority: str
    assigned_category: str | None = None  # None until triage labels it
    assigned_priority: str | None = None
    waiting_minutes: float = 0.0
    sentiment: str = "calm"
    returning: bool = False  # the customer wrote in before about this issue
    escalated: bool = False
    facts: dict[str, str] = field(default_factory=dict)  # what the tools revealed
    fact_details: dict[str, str] = field(default_factory=dict)  # the record behind each finding (dates, numbers)
    amount_on_record: float | None = None  # the order's or payment's amount, once a lookup showed it
    steps_done: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)  # what happened on the ticket, one line each


def ticket_view(ticket: Ticket, now: float, conversation: Sequence[str] = ()) -> TicketView:
    """The visible part of ``ticket`` at minute ``now`` (hidden facts and true labels never appear)."""
    return TicketView(
        ticket_id=ticket.id,
        customer_name=ticket.customer,
        tier=ticket.tier,
        subject=ticket.subject,
        body=ticket.body,
        declared_category=ticket.declared_category,
        declared_priority=ticket.declared_priority,
        assigned_category=ticket.assigned_category if ticket.triaged else None,
        assigned_priority=ticket.assigned_priority if ticket.triaged else None,
        waiting_minutes=round(max(0.0, now - ticket.first_arrival), 2),
        sentiment=mood(ticket.sentiment),
        returning=bool(ticket.contact),
        escalated=ticket.escalated,
        facts=dict(sorted(ticket.revealed.items())),
        fact_details={fact: detail.text for fact, detail in sorted(ticket.details.items())},
        amount_on_record=record_amount(ticket),
        steps_done=list(ticket.done),
        history=list(conversation),
    )


def record_amount(ticket: Ticket) -> float | None:
    """The amount of the order or payment once the order or payment lookup ran (what a refund owes)."""
    if "order_status" in ticket.revealed or "payment_status" in ticket.revealed:
        return amount_on_record(ticket)
    return None


#: The opening a language agent is told when the scenario states none (``opens_at`` 00:00, its default).
UNSTATED_OPENING = "09:00"


def clock(minute: float, opens_at: str = "00:00") -> str:
    """Wall-clock time of a shift minute: the scenario's opening time plus ``minute`` (a scenario that
    states no opening, 00:00, is told as a 09:00 start)."""
    return clock_time(int(minute), opens_at if opens_at != "00:00" else UNSTATED_OPENING)


def describe(center: ContactCenter, decision: Decision, conversation: Sequence[str] = ()) -> str:
    """The decision as text; ``conversation`` lists what happened on its ticket so far, one line each."""
    now = center.now
    lines = [
        ROLE_BRIEF[decision.role],
        f"You are {decision.agent}. It is {clock(now, center.scenario.opens_at)} ({now:.1f} minutes into a "
        f"{center.horizon:g}-minute shift).",
        _floor(center),
        "",
    ]
    if decision.phase is Phase.PICK:
        lines.append(f"Tickets waiting in your queue, in service order ({len(decision.slots)} shown):")
        lines += [_queue_line(ticket, now) for ticket in decision.slots[:SHOWN_FOR_PICK]]
    else:
        ticket = decision.ticket
        assert ticket is not None
        lines += _ticket_lines(ticket, now)
        if conversation:
            lines += ["", "So far on this ticket:", *(f"- {line}" for line in conversation)]
    lines += ["", TASK[decision.phase]]
    return "\n".join(lines)


def _floor(center: ContactCenter) -> str:
    waiting = ", ".join(
        f"{role} queue {queue.size}" for role, queue in center.queues.items() if center.peak[role] or queue.size
    )
    return f"Waiting now: {waiting}."


def _ticket_lines(ticket: Ticket, now: float) -> list[str]:
    waited = max(0.0, now - ticket.first_arrival)
    lines = [
        f"Ticket #{ticket.id} from {ticket.customer}, a {ticket.tier} customer, waiting {waited:.0f} min"
        + (" (they wrote in before: this issue was not resolved)" if ticket.contact else "")
        + f". {ticket.customer} seems {mood(ticket.sentiment)}.",
        f"The customer filed it as {ticket.declared_category}, urgency {ticket.declared_priority}.",
    ]
    if ticket.triaged:
        lines.append(f"Triage set it to {ticket.assigned_category}, priority {ticket.assigned_priority}.")
    if ticket.escalated:
        lines.append("It was escalated to the desk.")
    lines += ["", f"Subject: {ticket.subject}", ticket.body]
    if ticket.revealed:
        found = [f"{k} = {v}" for k, v in sorted(ticket.revealed.items())]
        amount = record_amount(ticket)
        if amount is not None:
            found.append(f"amount on record = ${amount:.2f}")
        lines += ["", "Your tools found: " + "; ".join(found) + "."]
        if ticket.details:
            lines.append("Their records: " + "; ".join(
                f"{fact} -- {detail.text}" for fact, detail in sorted(ticket.details.items())) + ".")
    if ticket.done:
        lines.append("Steps done: " + ", ".join(ticket.done) + ".")
    return lines


def mood(sentiment: float) -> str:
    """The customer's sentiment (-1..1) in words, as staff would read it from their messages."""
    if sentiment <= -0.6:
        return "furious"
    if sentiment <= -0.3:
        return "upset"
    if sentiment < -0.1:
        return "impatient"
    if sentiment <= 0.2:
        return "calm"
    return "pleased"


def _queue_line(ticket: Ticket, now: float) -> str:
    waited = max(0.0, now - ticket.arrival)
    return (
        f"- ticket_id {ticket.id}: {ticket.assigned_priority} priority, {ticket.assigned_category}, "
        f"{ticket.tier} customer, waiting {waited:.0f} min: \"{ticket.subject}\""
    )
