"""Tickets and the factory that writes them from the ticket bank.

A :class:`Ticket` carries what staff can see (text, tier, declared and assigned labels, revealed facts,
steps done) and what only the simulation knows (template, case, true labels, hidden facts, requirement).
Policies and observation encoders must read only the visible part.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

from ..config.domain import CATEGORIES, DIAGNOSTIC_TOOLS, PRIORITIES, SPECIALIST_WORK_TOOLS, TIERS, raise_priority
from ..config.scenario import Scenario
from ..config.tickets import Case, Requirement, Template, TicketBank
from .random import RandomStreams, UniformStream, cumulative, infinite_sampler, make_sampler
from .slots import slot_value
from .text_noise import TextNoise

N_CELLS: Final = len(PRIORITIES) * len(TIERS) * len(CATEGORIES)


class Ticket:
    """One customer contact moving through the center."""

    __slots__ = (
        # identity and visible content
        "id", "contact", "arrival", "first_arrival", "tier", "subject", "body", "text",
        "declared_category", "declared_priority", "assigned_category", "assigned_priority",
        "revealed", "details", "done", "actions", "stage", "escalated", "triaged",
        # hidden truth
        "template", "case", "requirement", "facts", "true_category", "true_priority",
        # timing and bookkeeping
        "patience_left", "enqueued_at", "deadline", "waiting_in", "answered_at", "queue_wait",
        "sla_deadline", "cell", "counted", "returns", "cache", "queue_marks",
        "transfers", "misroute",
        # the customer as a person: name, the values their text mentions, mood, the conversation
        "customer", "slot_values", "sentiment", "questions", "dialogue", "said", "grade", "offered",
        # what the rubric reads from the fixed content, worked out once (responses.py)
        "loud", "grade_key",
    )

    # What each slot holds (the annotations type-check every use of a ticket; slots keep it small).
    id: int
    contact: int  # 0 for the first contact, 1, 2, ... for a customer who came back
    arrival: float
    first_arrival: float
    tier: str
    subject: str
    body: str
    text: str
    declared_category: str
    declared_priority: str
    assigned_category: str
    assigned_priority: str
    revealed: dict[str, str]
    details: dict[str, Any]  # fact -> the record its lookup showed (sim/fact_details.py's Detail)
    done: tuple[str, ...]
    actions: int
    stage: str
    escalated: bool
    triaged: bool
    template: Template
    case: Case
    requirement: Requirement
    facts: dict[str, str]
    true_category: str
    true_priority: str
    patience_left: float
    enqueued_at: float
    deadline: float
    waiting_in: str | None  # the name of the queue it waits in (a name: no reference cycle)
    answered_at: float | None
    queue_wait: float
    sla_deadline: float
    cell: int
    counted: bool
    returns: int
    cache: Any
    queue_marks: int
    transfers: int
    misroute: float  # the routing cost of sending it to the desk when it did not need it, until sent back
    customer: str
    slot_values: dict[str, str]
    sentiment: float
    questions: tuple[str, ...]
    dialogue: tuple[tuple[str, str], ...]
    said: str | None
    grade: Any
    offered: Refund | None
    loud: bool | None
    grade_key: tuple[Any, ...] | None

    def __init__(self) -> None:
        self.revealed: dict[str, str] = {}
        self.details: dict[str, Any] = {}
        # Tuples, which a waiting ticket shares (the empty one) and the collector stops tracking: a
        # queue of thousands of tickets would otherwise hold three lists each for it to walk.
        self.done: tuple[str, ...] = ()
        self.actions = 0
        self.stage = "triage"
        self.escalated = False
        self.triaged = False
        self.waiting_in: str | None = None
        self.answered_at: float | None = None
        self.queue_wait = 0.0
        self.returns = 0
        self.cache: Any = None
        self.queue_marks = 0  # queues entered and taken from (KPIs count each contact's first visit)
        self.transfers = 0  # hand-overs between resolvers and the desk (escalate / return)
        self.misroute = 0.0
        self.sentiment = 0.0  # the customer's mood in [-1, 1] (customers.sentiment)
        self.questions: tuple[str, ...] = ()  # topics the customer was asked about (ask_customer)
        self.dialogue: tuple[tuple[str, str], ...] = ()  # (question, the customer's reply)
        self.said: str | None = None  # what the staff member wrote with the tool in progress
        self.offered: Refund | None = None  # the refund in progress (None: the amount owed)
        self.grade: Any = None  # the grade of the reply that closed this contact
        self.loud: bool | None = None  # anger or shouting in the text (None: not scanned yet)
        self.grade_key: tuple | None = None  # the fixed part of the documented reply's cache key

    # --- workflow state -------------------------------------------------------------------------
    def required(self) -> tuple[str, ...]:
        """The steps the current stage requires: specialist steps at the desk, resolver steps else."""
        if self.stage == "escalation" and self.requirement.specialist:
            return self.requirement.specialist
        return self.requirement.steps

    def needed_steps(self) -> tuple[str, ...]:
        """The steps the current stage still requires."""
        return tuple(step for step in self.required() if step not in self.done)

    def is_needed(self, tool: str) -> bool:
        """Whether ``tool`` is a required step now: not done yet and its diagnostics done."""
        required = self.required()
        if tool not in required or tool in self.done:
            return False  # not part of the workflow, or a repeat
        for step in required:
            if step == tool:
                return True
            if step not in self.done and step in DIAGNOSTIC_TOOLS:
                return False
        return True

    def resolvable(self) -> bool:
        """A response now resolves the ticket: everything the responder's stage needs is done."""
        requirement = self.requirement
        if requirement.specialist:
            if self.stage != "escalation":
                return False
            required = requirement.specialist
        else:
            required = requirement.steps
        done = self.done
        for step in required:  # a loop, not all(...): no generator per call on the hot path
            if step not in done:
                return False
        return True

    def __repr__(self) -> str:
        return (
            f"Ticket({self.id}, {self.true_category}/{self.true_priority}, tier={self.tier}, "
            f"stage={self.stage}, template={self.template.id})"
        )


#: A refund is right when it is within this many dollars of what the customer is owed.
REFUND_TOLERANCE: Final = 0.01
REFUND_TOOLS: Final[frozenset[str]] = frozenset({"initiate_refund", "approve_refund"})


def amount_on_record(ticket: Ticket) -> float:
    """The amount of the customer's order or payment, as the lookups show it: the amount the customer
    wrote (``amount`` slot, drawn for every ticket of a template that has one, shown or not), or for a
    template without one an amount fixed by the ticket's id (no random draw)."""
    written = ticket.slot_values.get("amount")
    if written is not None:
        try:
            return float(str(written).replace(",", "").lstrip("$"))
        except ValueError:
            pass
    return 15.0 + (ticket.id * 7919 % 18_500) / 100


def refund_owed(ticket: Ticket) -> bool:
    """Whether the ticket's case entitles the customer to a refund (its workflow has a refund step)."""
    requirement = ticket.requirement
    return not REFUND_TOOLS.isdisjoint(requirement.steps + requirement.specialist)


class Refund(NamedTuple):
    """A refund's arguments: its amount and the order (or invoice) it is for; None: what is owed."""

    amount: float | None = None
    order: str | None = None


def _digits(value: str) -> str:
    runs = re.findall(r"\d+", value)
    return max(runs, key=len) if runs else value.strip().lower()


def refund_verdict(ticket: Ticket, refund: Refund | None) -> str:
    """A refund (None: the amount owed on the customer's order, as built-in and vector-mode agents
    mean it) on ``ticket``: ``"right"``; ``"wrong_amount"`` (more than :data:`REFUND_TOLERANCE` off the
    amount on record) or ``"wrong_order"`` (an order or invoice that is not the customer's): a wrong
    step, the refund owed is still missing; or ``"not_due"`` (the case owes nothing: collateral
    damage)."""
    if not refund_owed(ticket):
        return "not_due"
    if refund is None:
        return "right"
    if refund.amount is not None and abs(refund.amount - amount_on_record(ticket)) > REFUND_TOLERANCE:
        return "wrong_amount"
    if refund.order is not None:
        theirs = {_digits(ticket.slot_values[key]) for key in ("order_id", "invoice_id") if key in ticket.slot_values}
        if _digits(refund.order) not in theirs:
            return "wrong_order"
    return "right"



def damage_of(ticket: Ticket, tool: str, role: str, verdict: str) -> str | None:
    """The damage a work call does, as the contact center counts it (``kpis.damages``):
    ``"collateral_damage"`` for a refund the case does not owe, ``"wrong_specialist_work"`` for a
    specialist work tool the escalation desk used where the ticket did not need it, else None.
    ``verdict``: the refund's :func:`refund_verdict` (``"right"`` for any other tool)."""
    if verdict == "not_due":
        return "collateral_damage"
    if tool in SPECIALIST_WORK_TOOLS and role == "escalation" and not ticket.is_needed(tool):
        return "wrong_specialist_work"
    return None

class TicketFactory:
    """Samples tickets: template by weight, case by weight, tier, text, priority and patience."""

    def __init__(self, scenario: Scenario, bank: TicketBank, streams: RandomStreams) -> None:
        self.bank = bank
        self._rng = streams["tickets"]
        self._u = UniformStream(self._rng)
        drawn = bank.templates_in(scenario.tickets.split, scenario.tickets.templates)  # all: split "all", no list
        self._templates = [template for template, _ in drawn]
        # The text noise indexes the split's templates; a named slice (tickets.templates) maps onto them.
        in_split = {template.id: i for i, (template, _) in enumerate(bank.templates_in(scenario.tickets.split))}
        self._noise_index = [in_split[template.id] for template in self._templates]
        self._variants = [variants for _, variants in drawn]
        self._n_templates = len(self._templates)
        self._template_cdf = cumulative([t.weight for t in self._templates])
        self._case_cdf = [cumulative([c.weight for c in t.cases]) for t in self._templates]
        self._requirements: dict[tuple[int, int], Requirement] = {
            (i, j): requirement
            for i, t in enumerate(self._templates)
            for j, requirement in enumerate(bank.case_requirements[t.id])
        }
        # per template, per case: (case, requirement, facts), what a ticket of that issue hides
        self._issues = [
            [(case, self._requirements[(i, j)], case.facts) for j, case in enumerate(t.cases)]
            for i, t in enumerate(self._templates)
        ]
        tiers = [t for t in TIERS if scenario.customers.tier_mix.get(t, 0.0) > 0]
        self._tiers = tiers
        self._tier_cdf = cumulative([scenario.customers.tier_mix[t] for t in tiers])
        customers = scenario.customers
        self._patience = (
            make_sampler(customers.patience, streams["patience"])
            if customers.patience is not None
            else infinite_sampler()
        )
        self._patience_factor = {t: customers.patience_factor.get(t, 1.0) for t in TIERS}
        self._category_accuracy = customers.self_report.category_accuracy
        self._priority_accuracy = customers.self_report.priority_accuracy
        self._sla = scenario.sla_minutes
        self._warmup = scenario.warmup_minutes
        self._next_id = 0
        self._slot_values = {k: list(v) for k, v in bank.slots.items()}
        self._slot_order: dict[str, tuple[str, ...]] = {}  # template id -> its slots in draw order
        self._names = self._slot_values.get("first_name") or list(_DEFAULT_NAMES)
        self._name_offset = int(streams.root.entropy) % 1009 if isinstance(streams.root.entropy, int) else 0
        noise = scenario.tickets.noise
        self._noise = (
            TextNoise(noise, bank, scenario.tickets.split, UniformStream(streams["text_noise"])) if noise.active else None
        )
        # (template, variant, tier) -> subject, body, text, true priority, for templates without slots
        self._fixed: dict[tuple[int, int, str], tuple[str, str, str, str]] = {}
        self._priority_rules = [_PriorityRule(template) for template in self._templates]

    def label_shares(self) -> tuple[dict[str, float], dict[str, float]]:
        """The share of this scenario's new tickets in each true category and on each route
        (``resolver`` / ``escalation``), exactly, from the template and case weights: the chance a
        label chosen without reading the ticket is right."""
        categories: dict[str, float] = dict.fromkeys(CATEGORIES, 0.0)
        routes = {"resolver": 0.0, "escalation": 0.0}
        total = sum(t.weight for t in self._templates)
        for template, issues in zip(self._templates, self._issues):
            share = template.weight / total
            categories[template.category] += share
            cases = sum(case.weight for case in template.cases)
            for case, (_, requirement, _) in zip(template.cases, issues):
                route = "escalation" if requirement.needs_escalation else "resolver"
                routes[route] += share * case.weight / cases
        return categories, routes

    def new(self, now: float) -> Ticket:
        u = self._u
        ti = u.choice(self._template_cdf) if self._n_templates > 1 else 0
        template = self._templates[ti]
        cases = template.cases
        ci = u.choice(self._case_cdf[ti]) if len(cases) > 1 else 0
        ticket = Ticket()
        ticket.id = self._next_id
        self._next_id += 1
        ticket.contact = 0
        ticket.template = template
        ticket.case, ticket.requirement, ticket.facts = self._issues[ti][ci]  # the hidden truth
        tiers = self._tiers
        ticket.tier = tier = tiers[u.choice(self._tier_cdf)] if len(tiers) > 1 else tiers[0]
        variants = self._variants[ti]
        vi = u.integer(len(variants)) if len(variants) > 1 else 0
        if template.slots:
            variant = variants[vi]
            values = self._slot_fill(template)
            ticket.subject = variant.subject.format_map(values)
            ticket.body = variant.body.format_map(values)
            ticket.text = f"{ticket.subject}\n{ticket.body}"
            true_priority = self._priority_rules[ti].of(tier, ticket.text)
        else:  # fixed text: written and read for its priority cues once per variant and tier
            values = _NO_SLOTS
            key = (ti, vi, tier)
            fixed = self._fixed.get(key)
            if fixed is None:
                variant = variants[vi]
                text = f"{variant.subject}\n{variant.body}"
                fixed = self._fixed[key] = (variant.subject, variant.body, text, self._priority_rules[ti].of(tier, text))
            ticket.subject, ticket.body, ticket.text, true_priority = fixed
        ticket.slot_values = values
        # Every slot is drawn whichever variant is shown, so the name is known even when this text
        # does not sign it; templates without the slot get one from the ticket's id (no draw).
        ticket.customer = values.get("first_name") or self._names[(ticket.id * 7919 + self._name_offset) % len(self._names)]
        ticket.true_category = category = template.category
        ticket.true_priority = true_priority
        # Self-reports: no draw at all when customers always report right.
        declared = category if self._category_accuracy >= 1.0 else self._declared_category(category)
        ticket.assigned_category = ticket.declared_category = declared
        declared = true_priority if self._priority_accuracy >= 1.0 else self._declared_priority(true_priority)
        ticket.assigned_priority = ticket.declared_priority = declared
        if self._noise is not None:  # staff read the noisy text; the truth above came from the clean one
            self._noise.rewrite(ticket, self._noise_index[ti], vi, variants[vi])
        ticket.patience_left = self._patience() * self._patience_factor[tier]
        self.stamp_arrival(ticket, now)
        return ticket

    def stamp_arrival(self, ticket: Ticket, now: float) -> None:
        """Start a (new or returning) contact at ``now``."""
        ticket.arrival = now
        if ticket.contact == 0:
            ticket.first_arrival = now
        ticket.sla_deadline = now + self._sla[ticket.true_priority]
        ticket.counted = now >= self._warmup
        ticket.cell = _CELL[(ticket.true_priority, ticket.tier, ticket.true_category)]

    def returning(self, old: Ticket, now: float) -> Ticket:
        """The same customer and issue back as a new contact, with fresh patience."""
        ticket = Ticket()
        for name in ("id", "template", "case", "requirement", "tier", "subject", "body", "text",
                     "true_category", "true_priority", "declared_category", "declared_priority",
                     "customer", "slot_values", "sentiment", "loud", "grade_key"):
            setattr(ticket, name, getattr(old, name))
        ticket.facts = old.facts
        ticket.contact = old.contact + 1
        ticket.first_arrival = old.first_arrival
        ticket.returns = old.returns + 1
        ticket.assigned_category = ticket.declared_category
        ticket.assigned_priority = raise_priority(ticket.declared_priority, 1)
        ticket.patience_left = self._patience() * self._patience_factor[ticket.tier]
        self.stamp_arrival(ticket, now)
        return ticket

    # --- helpers ----------------------------------------------------------------------------------
    def _slot_fill(self, template: Template) -> dict[str, str]:
        u = self._u
        listed = self._slot_values
        order = self._slot_order.get(template.id)
        if order is None:  # a set: sorted, or the draws follow PYTHONHASHSEED
            order = self._slot_order[template.id] = tuple(sorted(template.slots))
        return {slot: slot_value(slot, u, listed) for slot in order}

    def _declared_category(self, true: str) -> str:
        u = self._u
        if self._category_accuracy >= 1.0 or u() < self._category_accuracy:
            return true
        others = _OTHER_CATEGORIES[true]
        return others[u.integer(len(others))]

    def _declared_priority(self, true: str) -> str:
        u = self._u
        if self._priority_accuracy >= 1.0 or u() < self._priority_accuracy:
            return true
        level = PRIORITIES.index(true)
        # Customers overstate more often than they understate.
        if level < len(PRIORITIES) - 1 and (level == 0 or u() < 0.7):
            return PRIORITIES[level + 1]
        return PRIORITIES[level - 1]


_CELL: Final = {
    (p, t, c): (pi * len(TIERS) + ti) * len(CATEGORIES) + ci
    for pi, p in enumerate(PRIORITIES)
    for ti, t in enumerate(TIERS)
    for ci, c in enumerate(CATEGORIES)
}
#: Each cell's (priority, tier), in cell order: what a customer class costs does not depend on the category.
CELLS: Final[tuple[tuple[str, str], ...]] = tuple((p, t) for (p, t, _), _cell in sorted(_CELL.items(), key=lambda kv: kv[1]))
_NO_SLOTS: Final[dict[str, str]] = {}
_DEFAULT_NAMES: Final = ("Alex", "Robin", "Sam", "Jordan", "Casey", "Morgan", "Taylor", "Jamie")
_OTHER_CATEGORIES: Final = {c: [o for o in CATEGORIES if o != c] for c in CATEGORIES}


_LEVEL: Final = {p: i for i, p in enumerate(PRIORITIES)}


class _PriorityRule:
    """A template's priority rule (:class:`~csr_marl.config.tickets.PriorityRule`) read once: the
    base level, the tier raises and the cues in lower case. :meth:`of` is the true priority of a text
    (``raise_priority`` of the base by the tier's raise plus the strongest cue found)."""

    def __init__(self, template: Template) -> None:
        rule = template.priority
        self.base = _LEVEL[rule.base]
        self.tier_raise: dict[str, int] = dict(rule.tier_raise)
        self.cues = [(cue.lower(), levels) for cue, levels in rule.cues.items()]

    def of(self, tier: str, text: str) -> str:
        levels = self.tier_raise.get(tier, 0)
        if self.cues:
            lowered = text.lower()
            found = False
            strongest = 0
            for cue, raised in self.cues:
                if cue in lowered and (not found or raised > strongest):
                    strongest, found = raised, True
            levels += strongest
        return PRIORITIES[min(self.base + max(levels, 0), len(PRIORITIES) - 1)]
