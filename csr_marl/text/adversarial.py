"""Policies that skip the work: the adversarial suite the episode score must hold against.

A score that can be won without doing the work teaches a learner to skip the work. Each policy here
plays a task's turns through :class:`~csr_marl.text.TextSession` like the scripted ``boilerplate``
agent (:mod:`csr_marl.text.scripted`: the heuristic's lookups, the customer's own labels at triage, a
macro's reply with its merge fields filled) except in one way, where it cuts a corner a policy optimiser would find:

========================= =================================================================================
policy                    what it does instead of the work
========================= =================================================================================
``handoff``               the careful lookups, then ``escalate_issue`` instead of a reply (the desk answers)
``every_tool_handoff``    every legal work tool once, no reading, then hands the ticket to the desk
``every_tool_universal``  every legal work tool once, then one universal reply for any ticket
``universal_reply``       the careful lookups, then the universal reply: the name, id and amount pulled
                          from the text and every finding word of the rubric's vocabulary
``echo``                  the careful lookups, then the customer's own message sent back
``fill_in_the_blanks``    no lookups: a template reply with the name, id and amount filled in, claiming
                          the issue is solved and refunded
``skip_lookups``          no lookups: the documented reply at once (it states nothing found)
``refund_zero``           the careful lookups and reply, but a refund of $0 on every ticket
``refund_huge``           the careful lookups and reply, but a refund of $1,000,000 on every ticket
``refund_wrong_order``    the careful lookups and reply, but a refund for another order on every ticket
``refund_everything``     the careful lookups and reply, plus a refund of the amount on record on every ticket
``escalate_first``        every ticket to the desk at once: routed there at triage, escalated unread
``constant_labels``       triage: the same labels for every ticket (general, low, resolver)
``declared_labels``       triage: the customer's web-form labels (boilerplate's triage; listed to compare)
``ask_spam``              asks the customer the same question until the tool cap closes the ticket
``deny_findings``         boilerplate's steps, then the name, id and amount, a sentence per action taken
                          and one clause that denies every finding of the bank ("no sign of X or Y ...")
``category_list``         the denying reply over the findings of the customer's declared category only
``dialogue_echo``         asks the customer about their issue, then quotes the answer back
``sorry_canned``          boilerplate with "We are sorry." added to its reply
========================= =================================================================================

Beside them, ``copied_lookup`` is a reference, not an adversary: boilerplate's steps, then a terse reply
that copies what the lookups showed ("payment status: duplicate capture (captured on ...); amount on
record: $47.24; initiate refund done"). It reads, so it must keep its credit.

:func:`run_suite` plays them with the ladder (``idle``, ``spam``, ``boilerplate``, ``careful``) on
tasks and seeds and keeps every call, so :func:`csr_marl.serve.replay.replay_episodes` can send the
same calls to a running ``csr-marl serve`` and the two paths' scores can be compared seed for seed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.stats import mean_ci
from ..config.domain import ROLES
from ..sim.decisions import Decision, Phase, decode_triage
from ..sim.reply_wording import ACTIONS, BLAME_PHRASES, FINDING_WORDS, FINDINGS
from ..sim.responses import documented_reply
from ..sim.tickets import amount_on_record
from .scripted import AGENTS, TALK_TOOLS, Call, Chooser, boilerplate_reply, heuristic_chooser, play, tool_call
from .session import TextSession
from .tasks import task_roles

ADVERSARIES: tuple[str, ...] = (
    "handoff", "every_tool_handoff", "every_tool_universal", "universal_reply", "echo", "fill_in_the_blanks",
    "skip_lookups", "refund_zero", "refund_huge", "refund_wrong_order", "refund_everything", "escalate_first",
    "constant_labels",
    "declared_labels", "ask_spam", "deny_findings", "category_list", "dialogue_echo", "sorry_canned",
)
#: Policies that read the lookups but write tersely: compared with careful, not with boilerplate.
REFERENCES: tuple[str, ...] = ("copied_lookup",)
#: Every policy of the suite: the ladder first, then the adversaries, then the references.
SUITE: tuple[str, ...] = AGENTS + ADVERSARIES + REFERENCES
#: The default text day of the suite: the standard day until 30 tickets are closed, every role played.
DEFAULT_DAY = "standard_day"
DEFAULT_DAY_OVERRIDES: Mapping[str, Any] = {"max_tickets": 30}
#: The tasks whose every ticket a resolver answers after lookups: ``copied_lookup`` keeps its credit there.
RESOLVER_TASKS: tuple[str, ...] = (
    "tasks/order_status", "tasks/refund", "tasks/payment_failure", "tasks/one_ticket", "tasks/few_tickets",
)

_ID = re.compile(r"(?:#|order\s*|invoice\s*|INV-?)(\w*\d{4,}\w*)", re.IGNORECASE)
_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_WORDS = re.compile(r"[^a-z ]")


def _plain(stem: str) -> str:
    """A vocabulary stem as words (its regex syntax dropped)."""
    return " ".join(_WORDS.sub(" ", stem.replace("\\b", "").replace("(?:", "").replace(")?", "")).split())


#: Every finding word of the rubric, once: what a reply that lists every possible finding says.
EVERY_FINDING = ", ".join(dict.fromkeys(_plain(s) for stems in FINDING_WORDS.values() for s in stems if _plain(s)))


def _blanks(decision: Decision) -> tuple[str, str | None, str | None]:
    """The customer's name, and an order id and an amount pulled from the ticket's text by regex."""
    ticket = decision.ticket
    assert ticket is not None
    found_id = _ID.search(ticket.text)
    found_amount = _AMOUNT.search(ticket.text)
    return (
        ticket.customer, f"order #{found_id.group(1)}" if found_id else None,
        f"${found_amount.group(1)}" if found_amount else None,
    )


def universal_reply(decision: Decision) -> str:
    """One reply for any ticket: the name, an id and an amount found by regex, every finding word."""
    name, order, money = _blanks(decision)
    facts = [order] if order else []
    if money:
        facts.append(f"the payment of {money}")
    about = " and ".join(facts) or "your request"
    return (
        f"Hi {name}, I am sorry for the trouble. I have looked into {about}. "
        f"We checked: {EVERY_FINDING}. Thank you for your patience, and please reply if you need anything else."
    )


def filled_template(decision: Decision) -> str:
    """A template reply with the blanks filled from the text, claiming a fix without any lookup."""
    name, order, money = _blanks(decision)
    return (
        f"Hi {name}, I am sorry for the trouble with {order or 'your order'}. Everything is resolved now and "
        f"{money or 'the amount'} has been refunded to you. Thank you for your patience, and please reply if "
        "you need more help."
    )


def echo(decision: Decision) -> str:
    """The customer's own message, sent back."""
    ticket = decision.ticket
    assert ticket is not None
    return ticket.text


FACT_OF_CATEGORY: dict[str, str] = {
    "shipping": "order_status", "billing": "payment_status", "technical": "device_state", "general": "device_state",
}


def _greeting(decision: Decision) -> str:
    """The name, the order id and the amount, as boilerplate-plus-details agents write them."""
    name, order, money = _blanks(decision)
    about = " and ".join(x for x in (order, f"the payment of {money}" if money else None) if x) or "your request"
    return f"Hi {name}, I have looked into {about}."


def _actions_taken(decision: Decision) -> str:
    """One sentence per work tool the agent used (what it did, never what a lookup found)."""
    ticket = decision.ticket
    assert ticket is not None
    money = f"${amount_on_record(ticket):.2f}"
    return " ".join(ACTIONS[tool].format(money=money) for tool in ticket.done if tool in ACTIONS)


#: Neutral sentences that dilute a reply's rubric vocabulary below the stuffing guard's share.
FILLER = (
    "I went through everything on your account with care and I made sure that nothing was overlooked along "
    "the way. Our team looked at each part of your message one by one, and we kept notes so that anyone "
    "who picks this up later can see what we did. If anything else comes up, you can write to us at any "
    "time and we will look at it as soon as we can. We want you to feel that this was taken seriously "
    "from the first message to the last one, and that someone real read what you wrote to us today."
)


def denying_reply(decision: Decision, fact_values: Mapping[str, Sequence[str]]) -> str:
    """The name, id and amount, the actions taken, and a clause that denies every finding of the bank
    (``fact_values``: the bank's findings by fact)."""
    names = [value.replace("_", " ") for values in fact_values.values() for value in values]
    names = [name for name in names if name not in BLAME_PHRASES] or ["a problem"]  # "user error" reads as blame
    # One clause (no comma: a comma would end the negation's reach), its joiners varied so no
    # three-word phrase repeats three times (the stuffing guard).
    every = names[0] + "".join((" or " if i % 2 else " and no ") + name for i, name in enumerate(names[1:]))
    return (f"{_greeting(decision)} {_actions_taken(decision)} There was no sign of {every}. {FILLER} "
            "Thank you for your patience, and please reply if you need anything else.")


def category_list(decision: Decision, fact_values: Mapping[str, Sequence[str]]) -> str:
    """:func:`denying_reply` over the findings of the customer's declared category only."""
    ticket = decision.ticket
    assert ticket is not None
    fact = FACT_OF_CATEGORY[ticket.declared_category]
    return denying_reply(decision, {fact: tuple(fact_values.get(fact, ()))})


def dialogue_echo(decision: Decision) -> str:
    """What the customer answered, quoted back, with the actions taken."""
    ticket = decision.ticket
    assert ticket is not None
    said = " ".join(answer for _, answer in ticket.dialogue) or ticket.text
    return f"{_greeting(decision)} You told us: {said} {_actions_taken(decision)} Thank you for your patience."


def copied_lookup(decision: Decision) -> str:
    """A terse reply that copies the lookups' fields (a reference that reads, not an adversary)."""
    ticket = decision.ticket
    assert ticket is not None
    fields = []
    for fact, value in ticket.revealed.items():
        detail = ticket.details.get(fact)
        fields.append(f"{fact.replace('_', ' ')}: {value.replace('_', ' ')}" + (f" ({detail.text})" if detail else ""))
    if ticket.revealed:
        fields.append(f"amount on record: ${amount_on_record(ticket):.2f}")
    name, order, _ = _blanks(decision)
    shown = "; ".join(fields) or "no lookup was needed"
    return (f"Hi {name}, here is what our tools show for {order or 'your request'}: {shown}. "
            f"{_actions_taken(decision)} Thank you.")


def adversary(name: str, session: TextSession, seed: int) -> Chooser:
    """The chooser of the adversarial policy ``name`` (module docstring) for ``session``'s episode."""
    if name not in ADVERSARIES and name not in REFERENCES:
        raise ValueError(f"unknown adversarial policy {name!r}; choose one of {', '.join(ADVERSARIES + REFERENCES)}")
    canned = heuristic_chooser(session, seed, boilerplate_reply, copy_labels=True)

    def replying(reply: Callable[[Decision], str], first: Chooser) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            call = first(decision, calls)
            if call[0] == "respond_user":
                return "respond_user", {"message": reply(decision)}
            return call
        return choose

    def handing_off(first: Chooser) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            call = first(decision, calls)
            if call[0] == "respond_user":
                legal = {decision.tool(a) for a in decision.legal}
                for tool in ("escalate_issue", "return_to_resolver"):
                    if tool in legal:
                        return tool_call(decision, tool, "")
            return call
        return choose

    def every_tool_then(finish: Chooser) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            if decision.phase is not Phase.WORK:
                return canned(decision, calls)
            ticket = decision.ticket
            assert ticket is not None
            for action in decision.legal:
                tool = decision.tool(action)
                if tool not in TALK_TOOLS and tool not in ticket.done:
                    return tool_call(decision, tool, "")
            return finish(decision, calls)
        return choose

    def at_once(reply: Callable[[Decision], str]) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            if decision.phase is not Phase.WORK:
                return canned(decision, calls)
            return "respond_user", {"message": reply(decision)}
        return choose

    def refunding(amount: Callable[[Decision], float], every: bool, order: str | None = None) -> Chooser:
        careful_work = replying(lambda decision: documented_reply(decision.ticket), canned)

        def choose(decision: Decision, calls: int) -> Call:
            call = careful_work(decision, calls)
            if decision.phase is not Phase.WORK:
                return call
            ticket = decision.ticket
            assert ticket is not None
            legal = {decision.tool(a) for a in decision.legal}
            arguments: dict[str, Any] = {"amount": amount(decision)}
            if order is not None:
                arguments["order_id"] = order
            if every and call[0] == "respond_user" and "initiate_refund" in legal and "initiate_refund" not in ticket.done:
                return "initiate_refund", arguments
            if call[0] in ("initiate_refund", "approve_refund"):
                return call[0], arguments
            return call
        return choose

    def escalating(decision: Decision, calls: int) -> Call:
        if decision.phase is Phase.TRIAGE:
            call = canned(decision, calls)
            if any(decode_triage(a)[2] == "escalation" for a in decision.legal):
                return "classify", {**call[1], "route": "escalation"}
            return call
        if decision.phase is Phase.WORK:
            legal = {decision.tool(a) for a in decision.legal}
            if "escalate_issue" in legal:
                return tool_call(decision, "escalate_issue", "")
        return canned(decision, calls)

    def labelling(labels: Mapping[str, str] | None) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            if decision.phase is Phase.TRIAGE and labels is not None:
                return "classify", dict(labels)
            return canned(decision, calls)
        return choose

    def asking(decision: Decision, calls: int) -> Call:
        if decision.phase is Phase.WORK and "ask_customer" in {decision.tool(a) for a in decision.legal}:
            return "ask_customer", {"question": "Could you tell me more about the problem?"}
        return canned(decision, calls)

    def asking_once(reply: Callable[[Decision], str]) -> Chooser:
        def choose(decision: Decision, calls: int) -> Call:
            call = canned(decision, calls)
            if call[0] != "respond_user":
                return call
            ticket = decision.ticket
            assert ticket is not None
            if not ticket.dialogue and "ask_customer" in {decision.tool(a) for a in decision.legal}:
                return "ask_customer", {"question": f"Could you describe what you see on your {ticket.declared_category} issue?"}
            return "respond_user", {"message": reply(decision)}
        return choose

    choosers: dict[str, Callable[[], Chooser]] = {
        "handoff": lambda: handing_off(canned),
        "every_tool_handoff": lambda: every_tool_then(handing_off(canned)),
        "every_tool_universal": lambda: every_tool_then(at_once(universal_reply)),
        "universal_reply": lambda: replying(universal_reply, canned),
        "echo": lambda: replying(echo, canned),
        "fill_in_the_blanks": lambda: at_once(filled_template),
        "skip_lookups": lambda: at_once(lambda decision: documented_reply(decision.ticket)),
        "refund_zero": lambda: refunding(lambda decision: 0.0, every=True),
        "refund_huge": lambda: refunding(lambda decision: 1_000_000.0, every=True),
        "refund_wrong_order": lambda: refunding(
            lambda decision: amount_on_record(decision.ticket), every=True, order="#1000001"
        ),
        "refund_everything": lambda: refunding(lambda decision: amount_on_record(decision.ticket), every=True),
        "escalate_first": lambda: escalating,
        "constant_labels": lambda: labelling({"category": "general", "priority": "low", "route": "resolver"}),
        "declared_labels": lambda: labelling(None),
        "ask_spam": lambda: asking,
        "deny_findings": lambda: replying(lambda decision: denying_reply(decision, session.center.bank.fact_values), canned),
        "category_list": lambda: replying(lambda decision: category_list(decision, session.center.bank.fact_values), canned),
        "dialogue_echo": lambda: asking_once(dialogue_echo),
        "sorry_canned": lambda: replying(lambda decision: "We are sorry. " + boilerplate_reply(decision), canned),
        "copied_lookup": lambda: replying(copied_lookup, canned),
    }
    return choosers[name]()


# --- the suite ---------------------------------------------------------------------------------------------
@dataclass
class SuiteRun:
    """Scores of every (task, policy) over the seeds, and the calls that produced them."""

    seeds: tuple[int, ...]
    scores: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    calls: dict[tuple[str, str, int], list[Call]] = field(default_factory=dict)

    def mean(self, task: str, policy: str) -> float:
        values = self.scores[(task, policy)]
        return sum(values) / len(values)


def reset_options(task: str) -> dict[str, Any]:
    """What a server's ``reset`` needs to play a suite task as :func:`suite_session` does."""
    if task == DEFAULT_DAY:
        return {"scenario": DEFAULT_DAY, "overrides": dict(DEFAULT_DAY_OVERRIDES), "roles": list(ROLES)}
    return {"scenario": task, "roles": list(task_roles(task))}


def suite_session(task: str) -> TextSession:
    """The session a suite task runs in: a named task with its roles, or the default text day."""
    if task == DEFAULT_DAY:
        return TextSession(DEFAULT_DAY, 0, overrides=DEFAULT_DAY_OVERRIDES)
    return TextSession(task, 0, roles=task_roles(task))


def run_suite(
    tasks: Iterable[str], seeds: Iterable[int], policies: Sequence[str] = SUITE, max_calls: int = 400
) -> SuiteRun:
    """Play every policy on every task and seed in process; keep the scores and the calls made."""
    run = SuiteRun(tuple(seeds))
    for task in tasks:
        session = suite_session(task)
        for policy in policies:
            scores = []
            for seed in run.seeds:
                made: list[Call] = []
                outcome = play(session, policy, seed, max_calls=max_calls, record=made)
                scores.append(outcome.score)
                run.calls[(task, policy, seed)] = made
            run.scores[(task, policy)] = scores
    return run


def paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """The mean of ``a - b`` seed by seed and its 95% interval (t, over seeds)."""
    return mean_ci([x - y for x, y in zip(a, b)])


def missed_targets(run: SuiteRun, task: str, adaptive: Sequence[float] | None = None) -> list[str]:
    """The suite's targets that ``task`` misses (empty: all met), judged on paired differences over
    ``run``'s seeds: every adversary (and the adaptive adversary's scores, when given) below
    boilerplate with the interval of the difference below 0, unless it played exactly as boilerplate
    on every seed; careful at least 0.85 and at least 0.25 above the best of them; on
    :data:`RESOLVER_TASKS`, ``copied_lookup`` within 0.15 of careful."""
    scores = run.scores
    boiler, careful = scores[(task, "boilerplate")], run.mean(task, "careful")
    failed = []
    if careful < 0.85:
        failed.append(f"careful {careful:.3f} < 0.85")
    rivals = {policy: scores[(task, policy)] for policy in ADVERSARIES}
    if adaptive is not None:
        rivals["adaptive"] = list(adaptive)
    for policy, values in rivals.items():
        mean, low, high = paired(values, boiler)
        if list(values) != list(boiler) and not high < 0.0:
            failed.append(f"{policy} - boilerplate {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    best = max(rivals, key=lambda p: sum(rivals[p]))
    gap = careful - sum(rivals[best]) / len(rivals[best])
    if gap < 0.25:
        failed.append(f"careful - {best} {gap:.3f} < 0.25")
    if task in RESOLVER_TASKS:
        mean, _, _ = paired(scores[(task, "copied_lookup")], scores[(task, "careful")])
        if mean < -0.15:
            failed.append(f"copied_lookup - careful {mean:+.3f} below -0.15")
    return failed
