"""The contact center's tools as Python methods, one mixin per kind of work.

TRL's ``GRPOTrainer(environment_factory=...)`` turns every public method of the environment class
(except ``reset`` and ``get_reward``) into a tool: the name, the type hints and the Google-style
docstring become the tool's JSON schema. The mixins here hold exactly those methods; each forwards
the call to ``self._call`` (:class:`csr_marl.grpo.ContactCenterToolEnv`), which answers with the
text of what happened and the next decision. The wording follows :mod:`csr_marl.text.tools`, which
checks every call.
"""

from __future__ import annotations


class _Calls:
    def _call(self, name: str, **arguments: object) -> str:  # pragma: no cover - the env implements it
        raise NotImplementedError


class TriageTools(_Calls):
    """Triage: one call per new ticket."""

    def classify(self, category: str, priority: str, route: str) -> str:
        """Set the ticket's category and priority and route it.

        Args:
            category: one of billing, shipping, technical, general
            priority: one of low, medium, high, urgent
            route: who works the ticket next: resolver, or escalation for the specialists' desk
        """
        return self._call("classify", category=category, priority=priority, route=route)


class PickTools(_Calls):
    """Resolvers and the desk choose which waiting ticket to work next."""

    def pick_ticket(self, ticket_id: int) -> str:
        """Take one of the waiting tickets shown to work on it now.

        Args:
            ticket_id: the id of a waiting ticket
        """
        return self._call("pick_ticket", ticket_id=ticket_id)


class ReplyTools(_Calls):
    """Talking to the customer: the closing reply and questions."""

    def respond_user(self, message: str) -> str:
        """Answer the customer and close the ticket. Answering before the needed steps are done leaves the issue unresolved. The reply is graded: name the order and amount, say what was done, apologise to an upset customer, promise nothing that was not done.

        Args:
            message: the reply, as the customer will read it
        """
        return self._call("respond_user", message=message)

    def ask_customer(self, question: str) -> str:
        """Ask the customer a question and wait for the reply (asking the same thing twice annoys them).

        Args:
            question: the question, as the customer will read it
        """
        return self._call("ask_customer", question=question)


class ResolverTools(_Calls):
    """A resolver's lookups and actions."""

    def check_order_status(self) -> str:
        """Look up the order: reveals its shipping status."""
        return self._call("check_order_status")

    def check_payment(self) -> str:
        """Look up the payment: reveals what happened to the customer's money."""
        return self._call("check_payment")

    def initiate_refund(self, amount: float, order_id: str | None = None) -> str:
        """Start a refund to the customer's original payment method: the amount on record, when the case owes one.

        Args:
            amount: the amount in dollars
            order_id: optional: the order or invoice the refund is for (it must be the customer's)
        """
        if order_id is None:
            return self._call("initiate_refund", amount=amount)
        return self._call("initiate_refund", amount=amount, order_id=order_id)

    def update_shipping(self) -> str:
        """Change or re-send the shipment (address, carrier, replacement)."""
        return self._call("update_shipping")

    def troubleshoot(self) -> str:
        """Run remote diagnostics on the device: reveals its state."""
        return self._call("troubleshoot")

    def reset_account(self) -> str:
        """Reset the customer's login or account state."""
        return self._call("reset_account")

    def escalate_issue(self, reason: str) -> str:
        """Hand the ticket to the escalation desk (specialists).

        Args:
            reason: why the desk is needed
        """
        return self._call("escalate_issue", reason=reason)


class DeskTools(_Calls):
    """The escalation desk's specialist tools."""

    def approve_refund(self, amount: float, order_id: str | None = None) -> str:
        """Approve a refund beyond the resolvers' limits.

        Args:
            amount: the amount in dollars
            order_id: optional: the order or invoice the refund is for (it must be the customer's)
        """
        if order_id is None:
            return self._call("approve_refund", amount=amount)
        return self._call("approve_refund", amount=amount, order_id=order_id)

    def engineering_fix(self) -> str:
        """Have engineering fix a defect on the customer's device or account."""
        return self._call("engineering_fix")

    def fraud_review(self) -> str:
        """Review a suspected fraudulent charge or account takeover."""
        return self._call("fraud_review")

    def account_recovery(self) -> str:
        """Recover an account the customer cannot get into."""
        return self._call("account_recovery")

    def legal_review(self) -> str:
        """Review a legal or compliance matter."""
        return self._call("legal_review")

    def return_to_resolver(self, reason: str) -> str:
        """Send a ticket that does not need the desk back to the resolvers.

        Args:
            reason: why no specialist is needed
        """
        return self._call("return_to_resolver", reason=reason)


def tool_mixins(roles: tuple[str, ...]) -> tuple[type, ...]:
    """The mixins whose methods are the tools ``roles`` may ever use, in a fixed order."""
    mixins: list[type] = []
    if "triage" in roles:
        mixins.append(TriageTools)
    if "resolver" in roles or "escalation" in roles:
        mixins += [PickTools, ReplyTools]
    if "resolver" in roles:
        mixins.append(ResolverTools)
    if "escalation" in roles:
        mixins.append(DeskTools)
    return tuple(mixins)
