"""The episode's score in [-1, 1]: how well the caller handled the episode's tickets, beside the step rewards.

Step rewards follow the contact center's running costs (waiting, SLA breaches, steps, resolutions);
they are what RL over whole shifts wants. A language model trained with GRPO is compared with the other
rollouts of its group on one short episode, and needs a grade that only the work earns. Each ticket of
the episode gets a grade in [0, 1] for the work, or :data:`DAMAGE_GRADE` (-1) when the caller did
damage, and the episode scores their mean: 0 is what doing nothing earns, below 0 is harm. Scoring
version :data:`SCORING_VERSION` (4); earlier versions' scores are not comparable (CHANGELOG).

A ticket's grade counts only what the caller did, checked against the ticket's hidden truth (a ticket
the caller never acted on grades 0, and a colleague's work earns the caller nothing):

* **triage** (when the caller plays triage): the *product* of three checks, so no label buys another
  and a label that ignores the ticket earns about nothing -- category right (1 or 0), priority (1 right,
  0.5 one level off, 0 else), route right (the desk exactly when the ticket needs a specialist; 1 or 0,
  left out when the desk route was masked). On ``tasks/ticket_classify`` a constant label scores about
  0.06 and the customer's own labels about 0.5, against 0.9 for reading the ticket (the adversarial
  suite's page).
* **work** (when the caller plays a resolver or the desk): ``0.3 x coverage x efficiency`` for the
  caller's own steps -- coverage: the share of the steps the caller's roles owe the ticket that the
  caller did right (a colleague's steps do not count; a refund of the wrong amount or order is not the refund
  owed); efficiency: those steps over the caller's calls on the ticket (refused calls included,
  the closing or hand-over call not), at most 1 -- plus ``0.7 x`` the outcome:

  - the caller's own reply closed the ticket resolved: the reply grade / 0.5 (the rubric's 0-0.5);
  - the caller handed the ticket over (``escalate_issue``, ``return_to_resolver``) and the ticket's
    truth says that was right: the coverage (a hand-over is worth the work done before it);
  - anything else (a wrong hand-over, an unresolved close, a colleague's reply): 0.

  **Damage** grades the ticket :data:`DAMAGE_GRADE` (-1), whatever else was done on it: money or
  specialist work spent that the ticket's truth did not call for, what the contact center counts as
  damage (``kpis.damages``) --

  - a refund the case does not owe (:func:`csr_marl.sim.tickets.refund_verdict` ``"not_due"``);
  - a refund to an order that is not the customer's, or of more than the amount on record (a refund
    of less is a wrong step: the refund owed is still missing, nothing was given away);
  - a specialist tool the desk used where the ticket did not need it (now).

  The grade's full scale: a ticket handled perfectly earns +1 and one damaged loses 1, so a damaging
  call costs more than the best reply earns, and a policy that refunds every ticket to catch the ones
  owed scores below doing nothing unless nearly every ticket is owed one.

Playing both, a ticket weighs triage and work half each (CustomerSupportEnv's 0.2 + 0.1 + 0.2 +
0-0.5). The episode's score divides by the tickets that arrived, or by the scenario's ``max_tickets``
when it sets one, so stopping early never raises it: an idle rollout scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config.domain import PRIORITIES
from ..sim.decisions import Decision, Phase, decode_triage
from ..sim.tickets import REFUND_TOOLS, Refund, Ticket, amount_on_record, damage_of, refund_verdict

#: The version of the text tasks' scoring (this module and the reply rubric); 1 until the hand-off,
#: free-label and refund exploits were closed; 2 until findings needed their values, denials counted
#: as claims and a refund not owed cost a ticket's worth; 3 until episode scores could go below 0.
SCORING_VERSION = 4
STEPS_WEIGHT = 0.3
REPLY_WEIGHT = 0.7
REPLY_MAX = 0.5  # the rubric's top grade
#: A ticket's grade when the caller did damage on it (module docstring): the grade's full scale below
#: doing nothing, as far below as a perfect ticket is above it.
DAMAGE_GRADE = -1.0
#: Priority credit by distance in levels from the true priority.
PRIORITY_CREDIT = (1.0, 0.5, 0.0, 0.0)
_HAND_OVERS = ("escalate_issue", "return_to_resolver")


@dataclass
class _TicketRecord:
    ticket: Ticket
    work_calls: int = 0  # the caller's calls in the work phase, refused ones included
    acted: bool = False  # the caller made at least one accepted call on it
    triage: dict[str, float] = field(default_factory=dict)  # check -> credit in [0, 1]
    steps: set[str] = field(default_factory=set)  # work tools the caller used right
    handed_over: str | None = None  # the caller's last hand-over tool
    hand_over_right: bool = False
    collateral: int = 0  # damaging calls: refunds not owed, to another order or too large; needless specialist work
    closed: bool = False
    resolved: bool = False
    reply: float | None = None  # the grade of the caller's own closing reply (None: not the caller's)


class EpisodeScore:
    """Tracks the caller's calls and the tickets' outcomes over an episode; :meth:`value` is the score."""

    def __init__(self, roles: tuple[str, ...], max_tickets: int | None) -> None:
        self.triage = "triage" in roles
        self.resolver = "resolver" in roles
        self.desk = "escalation" in roles
        self.work = self.resolver or self.desk
        self.max_tickets = max_tickets
        self.tickets: dict[int, _TicketRecord] = {}

    def call(self, decision: Decision, action: int | None, refund: Refund | None = None, *, own: bool = True) -> None:
        """The caller answered ``decision`` with ``action`` (None: the call was refused); ``refund`` is
        a refund's amount and order (None: what is owed). ``own=False``: ``action`` is the fallback
        taken after refused calls, not the caller's: its labels earn nothing (the customer's own
        labels, which a triage fallback passes on, are right three times in four)."""
        ticket = decision.ticket
        if ticket is None:  # a pick starts work, it is not graded on its own
            return
        record = self.tickets.setdefault(ticket.id, _TicketRecord(ticket))
        if decision.phase is Phase.TRIAGE:
            if action is None:
                return
            if not own:
                routed = any(decode_triage(a)[2] == "escalation" for a in decision.legal)
                record.triage = {"category": 0.0, "priority": 0.0, **({"route": 0.0} if routed else {})}
                record.acted = True
                return
            category, priority, route = decode_triage(action)
            distance = abs(PRIORITIES.index(priority) - PRIORITIES.index(ticket.true_priority))
            record.triage = {
                "category": float(category == ticket.true_category),
                "priority": PRIORITY_CREDIT[distance],
            }
            if any(decode_triage(a)[2] == "escalation" for a in decision.legal):
                record.triage["route"] = float((route == "escalation") == ticket.requirement.needs_escalation)
            record.acted = True
            return
        record.work_calls += 1
        if action is None:
            return
        record.acted = True
        tool = decision.tool(action)
        if tool in _HAND_OVERS:
            needs = ticket.requirement.needs_escalation
            record.handed_over, record.hand_over_right = tool, needs if tool == "escalate_issue" else not needs
        else:
            record.collateral += damages(decision, tool, refund)
            if tool in REFUND_TOOLS:
                if refund_verdict(ticket, refund) == "right":
                    record.steps.add(tool)
            elif tool != "respond_user":
                record.steps.add(tool)

    def closed(self, ticket: Ticket, resolved: bool, grade: float | None) -> None:
        """A ticket of the episode was answered: ``grade`` is the reply's grade when the reply was the
        caller's own, None when a colleague's (it closes the ticket but earns the caller nothing)."""
        record = self.tickets.get(ticket.id)
        if record is not None:
            record.closed, record.resolved = True, resolved
            record.reply = grade

    def ticket_grade(self, record: _TicketRecord) -> float:
        """One ticket's grade in [0, 1], or :data:`DAMAGE_GRADE` after damage (module docstring)."""
        if not record.acted:
            return 0.0
        if record.collateral:
            return DAMAGE_GRADE
        parts: list[float] = []
        if self.triage:
            credit = 1.0 if record.triage else 0.0
            for value in record.triage.values():
                credit *= value
            parts.append(credit)
        if self.work:
            parts.append(self._work_grade(record))
        return min(1.0, max(0.0, sum(parts) / len(parts))) if parts else 0.0

    def _work_grade(self, record: _TicketRecord) -> float:
        if not record.work_calls:
            return 0.0
        requirement = record.ticket.requirement
        owed = (requirement.steps if self.resolver else ()) + (requirement.specialist if self.desk else ())
        coverage = sum(step in record.steps for step in owed) / len(owed) if owed else 1.0
        closing = 1 if record.handed_over or record.reply is not None else 0
        calls = record.work_calls - closing
        efficiency = min(1.0, max(len(owed), 1) / calls) if calls > 0 else 1.0
        outcome = 0.0
        if record.reply is not None and record.resolved:
            outcome = min(record.reply, REPLY_MAX) / REPLY_MAX
        elif record.handed_over and record.hand_over_right:
            outcome = coverage
        return STEPS_WEIGHT * coverage * efficiency + REPLY_WEIGHT * outcome

    def breakdown(self) -> list[dict[str, Any]]:
        """What the score recorded per ticket, in arrival order: the triage ``checks`` (check -> credit),
        the work ``steps`` done right, the judge's ``reply`` grade of the caller's own closing reply (None:
        not the caller's), ``resolved``, ``collateral`` (damaging calls: module docstring), ``acted`` and
        the ticket's ``grade``."""
        return [
            {"checks": dict(r.triage), "steps": sorted(r.steps), "reply": r.reply, "resolved": r.resolved,
             "collateral": r.collateral, "acted": r.acted, "grade": self.ticket_grade(r)}
            for r in self.tickets.values()
        ]

    def value(self, arrived: int) -> float:
        """The episode's score in [-1, 1]: the mean ticket grade over the episode's tickets (module
        docstring)."""
        count = max(arrived, self.max_tickets or 0, 1)
        return sum(self.ticket_grade(record) for record in self.tickets.values()) / count


def damages(decision: Decision, tool: str, refund: Refund | None) -> bool:
    """Whether the work call ``tool`` (with ``refund``'s arguments) on ``decision``'s ticket does
    damage (module docstring), checked before the call takes effect: what the core counts
    (:func:`~csr_marl.sim.tickets.damage_of`), and money sent where the caller named it wrongly -- to
    an order that is not the customer's, or more than the amount on record (the core's built-in and
    vector agents always refund what is owed, so only a caller that names the order or amount can)."""
    ticket = decision.ticket
    assert ticket is not None
    verdict = refund_verdict(ticket, refund) if tool in REFUND_TOOLS else "right"
    if damage_of(ticket, tool, decision.role, verdict) is not None or verdict == "wrong_order":
        return True
    return verdict == "wrong_amount" and refund is not None and refund.amount is not None \
        and refund.amount > amount_on_record(ticket)
