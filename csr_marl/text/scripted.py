"""Scripted agents for the text interface: the ladder an episode score must order.

Four ways to play a task's turns through :class:`~csr_marl.text.TextSession`, from worst to best:

* ``idle`` -- makes no call (a rollout whose model never calls a tool);
* ``spam`` -- stalls: every lookup tool on offer (the diagnostics), round and round, never answering; triage sets the
  same labels whatever the ticket says;
* ``boilerplate`` -- works the ticket as the built-in heuristic does, then closes it with a contact
  center's macro (:func:`~csr_marl.sim.responses.macro_reply`): the customer's name, the order id
  and amount, an apology and the actions taken, never what a lookup found; triage copies the
  customer's own labels;
* ``careful`` -- the heuristic's steps and a reply that names the customer, the order or amount and
  what was found and done (the rubric's documented reply); triage reads the ticket (the heuristic).

:func:`play` runs one episode with one of them and reports the episode score, the step rewards'
sum and how the episode ended. The tests and the GRPO results page check that
``idle < spam < boilerplate < careful`` on every task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config.domain import DIAGNOSTIC_TOOLS
from ..policies.base import make_policy
from ..sim.decisions import Decision, Phase, decode_triage
from ..sim.responses import documented_reply, macro_reply
from ..sim.tickets import amount_on_record
from .session import TextSession

AGENTS = ("idle", "spam", "boilerplate", "careful")
#: A canned reply with no merge field (the yardstick of scoring v3 and earlier; an adversary's now).
CANNED = "Thank you for contacting us. We have handled your request. Have a nice day."
#: Tools that close, hand over or talk: a stalling agent never uses them.
TALK_TOOLS = ("respond_user", "escalate_issue", "return_to_resolver", "ask_customer")
_TEXT_ARGUMENTS = {
    "reason": "this needs the other desk",
    "question": "Could you tell me more about the problem?",
}

Call = tuple[str, dict[str, Any]]
#: A scripted player: the call for a decision, given how many calls the episode has made so far.
Chooser = Callable[[Decision, int], Call]


@dataclass(frozen=True)
class Outcome:
    """One scripted episode: the episode score, the caller's step rewards, calls made, how it ended."""

    agent: str
    score: float
    step_return: float
    calls: int
    terminated: bool
    truncated: bool


def play(
    session: TextSession, agent: str, seed: int, max_calls: int = 30, record: list[Call] | None = None
) -> Outcome:
    """One episode of ``session`` played by the scripted ``agent`` (one of :data:`AGENTS`, or a policy
    of the adversarial suite, :mod:`csr_marl.text.adversarial`), stopped (truncated) after
    ``max_calls`` calls; ``record`` collects the calls made."""
    from .adversarial import ADVERSARIES, REFERENCES, adversary

    if agent not in AGENTS and agent not in ADVERSARIES and agent not in REFERENCES:
        raise ValueError(
            f"unknown scripted agent {agent!r}; choose one of {', '.join(AGENTS + ADVERSARIES + REFERENCES)}"
        )
    turn = session.reset(seed=seed)
    choose = _chooser(agent, session, seed) if agent in AGENTS else adversary(agent, session, seed)
    total, calls = 0.0, 0
    while turn is not None and calls < max_calls and agent != "idle":
        name, arguments = choose(session.decision, calls)
        if record is not None:
            record.append((name, arguments))
        step = session.step(name, arguments)
        total += step.reward
        calls += 1
        turn = step.turn
    if turn is not None:
        session.stop()
    return Outcome(agent, session.score, total, calls, session.terminated, session.truncated)


def first_call(session: TextSession, agent: str, seed: int) -> Call:
    """The scripted ``agent``'s call for ``session``'s pending decision (after ``reset``), as
    ``(tool name, arguments)``: the examples a model's warm start imitates."""
    if agent == "idle" or agent not in AGENTS:
        raise ValueError(f"first_call: {agent!r} makes no call; choose one of {', '.join(AGENTS[1:])}")
    assert session.decision is not None, "reset the session first"
    return _chooser(agent, session, seed)(session.decision, 0)


def _chooser(agent: str, session: TextSession, seed: int) -> Chooser:
    if agent == "spam":
        return _spam
    if agent == "boilerplate":
        return heuristic_chooser(session, seed, boilerplate_reply, copy_labels=True)
    return heuristic_chooser(session, seed, lambda decision: documented_reply(decision.ticket), copy_labels=False)


def boilerplate_reply(decision: Decision) -> str:
    """The boilerplate agent's reply: the macro with its merge fields filled from ``decision``'s ticket."""
    assert decision.ticket is not None
    return macro_reply(decision.ticket)


def _spam(decision: Decision, calls: int) -> Call:
    if decision.phase is Phase.TRIAGE:
        return "classify", {"category": "general", "priority": "low", "route": "resolver"}
    if decision.phase is Phase.PICK:
        return "pick_ticket", {"ticket_id": decision.slots[0].id}
    lookups = [decision.tool(a) for a in decision.legal if decision.tool(a) in DIAGNOSTIC_TOOLS]
    if not lookups:  # nothing but talking is on offer: keep asking
        return "ask_customer", {"question": _TEXT_ARGUMENTS["question"]}
    return tool_call(decision, lookups[calls % len(lookups)], "")


def heuristic_chooser(
    session: TextSession, seed: int, reply: Callable[[Decision], str], copy_labels: bool
) -> Chooser:
    """Work as the heuristic that knows every issue of the bank (``heuristic_full``) does, closing with
    ``reply``; triage copies the customer's own labels when ``copy_labels``, reads the ticket else."""
    heuristic = make_policy("heuristic_full", session.scenario, np.random.default_rng(seed))
    bind = getattr(heuristic, "bind", None)
    if bind is not None:
        bind(session.center)

    def choose(decision: Decision, calls: int) -> Call:
        if decision.phase is Phase.TRIAGE and copy_labels:
            ticket = decision.ticket
            assert ticket is not None
            return "classify", {
                "category": ticket.declared_category, "priority": ticket.declared_priority, "route": "resolver",
            }
        action = heuristic(decision)
        if decision.phase is Phase.TRIAGE:
            category, priority, route = decode_triage(action)
            return "classify", {"category": category, "priority": priority, "route": route}
        if decision.phase is Phase.PICK:
            return "pick_ticket", {"ticket_id": decision.slots[action].id}
        return tool_call(decision, decision.tool(action), reply(decision))

    return choose


def tool_call(decision: Decision, tool: str, reply: str) -> Call:
    """``tool`` with the arguments its schema asks for."""
    ticket = decision.ticket
    assert ticket is not None
    if tool == "respond_user":
        return tool, {"message": reply}
    if tool in ("initiate_refund", "approve_refund"):
        return tool, {"amount": amount_on_record(ticket)}  # what the lookups show
    if tool in ("escalate_issue", "return_to_resolver"):
        return tool, {"reason": _TEXT_ARGUMENTS["reason"]}
    if tool == "ask_customer":
        return tool, {"question": _TEXT_ARGUMENTS["question"]}
    return tool, {}
