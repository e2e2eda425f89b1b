"""What a ticket's case needed of the caller beyond lookups and a reply, and whether the caller did it.

A lookup reveals the case (the order is delayed, the charge was captured twice); the bank's playbook
says what that finding calls for (:mod:`csr_marl.config.tickets`): a shipping update, a refund, the
desk. A model can learn to look up and answer well without ever acting on what it found, and the
episode score alone does not show which; these counts do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..config.domain import DIAGNOSTIC_TOOLS, RESOLVER_WORK_TOOLS, SPECIALIST_WORK_TOOLS
from ..sim.tickets import Ticket

HAND_OVER = "escalate_issue"
#: The calls that act on a case (money, shipping, accounts, specialist work, the hand-over to the desk):
#: every work tool but the lookups.
ACTION_TOOLS: frozenset[str] = (RESOLVER_WORK_TOOLS | SPECIALIST_WORK_TOOLS | {HAND_OVER}) - DIAGNOSTIC_TOOLS


def needed_actions(ticket: Ticket, roles: Sequence[str]) -> list[str]:
    """The actions ``ticket``'s case needs of a caller playing ``roles``: a resolver owes the
    playbook's steps but the lookups, and the hand-over when the case needs the desk and the caller
    is not the desk too; the desk owes the specialist steps. Triage alone owes none."""
    requirement = ticket.requirement
    needs: list[str] = []
    if "resolver" in roles:
        needs += [step for step in requirement.steps if step not in DIAGNOSTIC_TOOLS]
        if requirement.needs_escalation and "escalation" not in roles:
            needs.append(HAND_OVER)
    if "escalation" in roles:
        needs += list(requirement.specialist)
    return list(dict.fromkeys(needs))


def case_actions(ticket: Ticket, roles: Sequence[str], scored: Mapping[str, Any],
                 accepted: Iterable[str]) -> dict[str, list[str]]:
    """For one ticket: ``needs`` (:func:`needed_actions`), ``needs_done`` (those the caller did right:
    a refund counts when the score took it as the refund owed, ``scored["steps"]``), ``actions`` (the
    action tools among the caller's ``accepted`` calls) and ``unneeded`` (those the case did not need,
    e.g. a refund not owed)."""
    needs = needed_actions(ticket, roles)
    called = list(dict.fromkeys(name for name in accepted if name in ACTION_TOOLS))
    right = set(scored.get("steps", ())) | ({HAND_OVER} & set(called))
    return {
        "needs": needs,
        "needs_done": [action for action in needs if action in right],
        "actions": called,
        "unneeded": [action for action in called if action not in needs],
    }


def action_counts(tickets: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """Over tickets annotated by :func:`case_actions`: ``needing`` (cases that needed an action),
    ``done`` (of those, cases where every needed action was done), ``actions`` (action calls made) and
    ``unneeded`` (of those, the ones the case did not need); None when the tickets carry no such
    record (episodes over a server, or recorded before it was kept)."""
    rows = list(tickets)
    if not rows or any("needs" not in row for row in rows):
        return None
    needing = [row for row in rows if row["needs"]]
    return {
        "needing": len(needing),
        "done": sum(len(row["needs_done"]) == len(row["needs"]) for row in needing),
        "actions": sum(len(row["actions"]) for row in rows),
        "unneeded": sum(len(row["unneeded"]) for row in rows),
    }
