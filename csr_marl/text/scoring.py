"""The episode's score in [0, 1]: how well the caller handled the episode's tickets, beside the step rewards.

Step rewards follow the contact center's running costs (waiting, SLA breaches, steps, resolutions);
they are what RL over whole shifts wants. A language model trained with GRPO is compared with the other
rollouts of its group on one short episode, and needs a grade that cannot be gamed by doing nothing,
stalling, or closing with a boilerplate reply. The score is the seeds' convention: each ticket of the
episode gets a grade in [0, 1] and the episode scores their mean.

A ticket's grade counts only what the caller did (a ticket the caller never acted on grades 0):

* **triage** (when the caller plays triage), on the seeds' scale: category right 0.2, priority right
  0.1, route right 0.2 (the desk for a ticket that needs a specialist, the resolvers otherwise),
  divided by what was on offer (0.3 when the escalation route was masked);
* **work** (when the caller plays a resolver or the desk): ``0.3 x coverage x efficiency`` for the
  steps -- coverage: the share of the case's required steps done; efficiency: required steps over
  the caller's calls on the ticket (refused calls included), at most 1 -- plus ``0.7 x (reply grade
  / 0.5)`` when the ticket was closed resolved (the rubric's 0-0.5 grade of the closing reply). A
  resolution with a one-word reply earns little; a careful reply without the needed steps earns
  nothing for the reply, because the ticket was not resolved.

Playing both, a ticket weighs triage and work half each (CustomerSupportEnv's 0.2 + 0.1 + 0.2 +
0-0.5). The episode's score divides by the tickets that arrived, or by the scenario's ``max_tickets``
when it sets one, so stopping early never raises it: an idle rollout scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sim.decisions import Decision, Phase, decode_triage
from ..sim.tickets import Ticket

TRIAGE_WEIGHTS = {"category": 0.2, "priority": 0.1, "route": 0.2}
STEPS_WEIGHT = 0.3
REPLY_WEIGHT = 0.7
REPLY_MAX = 0.5  # the rubric's top grade


@dataclass
class _TicketRecord:
    ticket: Ticket
    work_calls: int = 0  # the caller's calls in the work phase, refused ones included
    acted: bool = False  # the caller made at least one accepted call on it
    triage: dict[str, bool] = field(default_factory=dict)  # part -> right
    route_offered: bool = True
    closed: bool = False
    resolved: bool = False
    reply: float = 0.0


class EpisodeScore:
    """Tracks the caller's calls and the tickets' outcomes over an episode; :meth:`value` is the score."""

    def __init__(self, roles: tuple[str, ...], max_tickets: int | None) -> None:
        self.triage = "triage" in roles
        self.work = any(role in roles for role in ("resolver", "escalation"))
        self.max_tickets = max_tickets
        self.tickets: dict[int, _TicketRecord] = {}

    def call(self, decision: Decision, action: int | None) -> None:
        """The caller answered ``decision`` with ``action`` (None: the call was refused)."""
        ticket = decision.ticket
        if ticket is None:  # a pick starts work, it is not graded on its own
            return
        record = self.tickets.setdefault(ticket.id, _TicketRecord(ticket))
        if decision.phase is Phase.TRIAGE:
            if action is None:
                return
            category, priority, route = decode_triage(action)
            needs_desk = bool(ticket.requirement.specialist)
            record.triage = {
                "category": category == ticket.true_category,
                "priority": priority == ticket.true_priority,
                "route": (route == "escalation") == needs_desk,
            }
            record.route_offered = any(decode_triage(a)[2] == "escalation" for a in decision.legal)
            record.acted = True
            return
        record.work_calls += 1
        if action is not None:
            record.acted = True

    def closed(self, ticket: Ticket, resolved: bool, grade: float) -> None:
        """A ticket of the episode was answered (by the caller or a colleague)."""
        record = self.tickets.get(ticket.id)
        if record is not None:
            record.closed, record.resolved, record.reply = True, resolved, grade

    def ticket_grade(self, record: _TicketRecord) -> float:
        """One ticket's grade in [0, 1] (module docstring)."""
        if not record.acted:
            return 0.0
        parts: list[float] = []
        if self.triage:
            weights = dict(TRIAGE_WEIGHTS)
            if not record.route_offered:
                weights.pop("route")
            earned = sum(w for part, w in weights.items() if record.triage.get(part))
            parts.append(earned / sum(weights.values()))
        if self.work:
            ticket = record.ticket
            required = ticket.requirement.steps + ticket.requirement.specialist
            coverage = sum(step in ticket.done for step in required) / len(required) if required else 1.0
            calls = record.work_calls - (1 if record.closed else 0)
            efficiency = min(1.0, max(len(required), 1) / calls) if calls > 0 else 1.0
            steps = STEPS_WEIGHT * coverage * efficiency if record.work_calls else 0.0
            reply = REPLY_WEIGHT * min(record.reply, REPLY_MAX) / REPLY_MAX if record.resolved else 0.0
            parts.append(steps + reply)
        return min(1.0, max(0.0, sum(parts) / len(parts))) if parts else 0.0

    def value(self, arrived: int) -> float:
        """The episode's score: the mean ticket grade over the episode's tickets (module docstring)."""
        count = max(arrived, self.max_tickets or 0, 1)
        return sum(self.ticket_grade(record) for record in self.tickets.values()) / count
