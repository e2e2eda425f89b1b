"""The fixed vocabulary of the contact center: categories, priorities, tiers, tools and facts.

Order matters: action and observation encodings index into these tuples, so append, never reorder.
"""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = ("billing", "shipping", "technical", "general")
PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "urgent")  # index = urgency level
TIERS: tuple[str, ...] = ("basic", "premium", "enterprise")
ROLES: tuple[str, ...] = ("triage", "resolver", "escalation")
ROUTES: tuple[str, ...] = ("resolver", "escalation")

# Resolver tools. ``escalate_issue`` and ``respond_user`` end the resolver's work on a ticket;
# ``ask_customer`` (appended last, after the v1 layout) asks the customer a question and waits for
# the reply.
RESOLVER_TOOLS: tuple[str, ...] = (
    "check_order_status",
    "check_payment",
    "initiate_refund",
    "update_shipping",
    "troubleshoot",
    "reset_account",
    "escalate_issue",
    "respond_user",
    "ask_customer",
)
# Escalation-desk tools. ``respond_user`` closes, ``return_to_resolver`` sends a mis-escalated ticket back.
SPECIALIST_TOOLS: tuple[str, ...] = (
    "approve_refund",
    "engineering_fix",
    "fraud_review",
    "account_recovery",
    "legal_review",
    "respond_user",
    "return_to_resolver",
    "ask_customer",
)
# Tools that talk to the customer rather than work on the ticket: never a workflow step.
DIALOGUE_TOOLS: frozenset[str] = frozenset({"ask_customer"})
# Tools that do work on a ticket (the rest hand it on, close it, or talk to the customer).
RESOLVER_WORK_TOOLS: frozenset[str] = frozenset(RESOLVER_TOOLS) - {"escalate_issue", "respond_user"} - DIALOGUE_TOOLS
SPECIALIST_WORK_TOOLS: frozenset[str] = frozenset(SPECIALIST_TOOLS) - {
    "respond_user",
    "return_to_resolver",
} - DIALOGUE_TOOLS
ALL_TOOLS: tuple[str, ...] = tuple(dict.fromkeys(RESOLVER_TOOLS + SPECIALIST_TOOLS))

# Hidden facts and the tool whose result reveals them.
FACT_REVEALED_BY: dict[str, str] = {
    "order_status": "check_order_status",
    "payment_status": "check_payment",
    "device_state": "troubleshoot",
}
DIAGNOSTIC_TOOLS: frozenset[str] = frozenset(FACT_REVEALED_BY.values())


def raise_priority(priority: str, levels: int) -> str:
    """``priority`` raised by ``levels`` steps, capped at ``urgent``."""
    index = min(PRIORITIES.index(priority) + max(levels, 0), len(PRIORITIES) - 1)
    return PRIORITIES[index]
