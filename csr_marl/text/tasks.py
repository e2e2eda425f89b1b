"""Named tasks for language-model agents: a shipped scenario and the roles its agent plays.

Each task is a scenario under ``scenarios/tasks/`` (load it by name anywhere a scenario is taken)
and the roles the caller plays; built-in colleagues play the rest. The server, the GRPO integration
and :func:`task_session` use these roles when a client names the task without choosing roles.

| task | the seeds' task | caller plays | tickets |
|---|---|---|---|
| ``tasks/order_status`` | CSREnv order status | resolver | 1 |
| ``tasks/refund`` | CSREnv refund | resolver | 1 |
| ``tasks/payment_failure`` | CSREnv payment failure | resolver | 1 |
| ``tasks/ticket_classify`` | CustomerSupportEnv ticket-classify | triage | 1 |
| ``tasks/ticket_resolve`` | CustomerSupportEnv ticket-resolve | triage, resolver | 1 |
| ``tasks/queue_management`` | CustomerSupportEnv queue-management | triage, resolver | 3 |
| ``tasks/one_ticket`` | (GRPO preset) any ticket of the bank | resolver | 1 |
| ``tasks/few_tickets`` | (GRPO preset) three tickets at once | resolver | 3 |
| ``tasks/classify``, ``tasks/resolve``, ``tasks/queue5`` | (whole shifts for RL) | triage / resolver / resolver | many |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .session import Colleagues, TextSession

TASK_ROLES: dict[str, tuple[str, ...]] = {
    "tasks/order_status": ("resolver",),
    "tasks/refund": ("resolver",),
    "tasks/payment_failure": ("resolver",),
    "tasks/ticket_classify": ("triage",),
    "tasks/ticket_resolve": ("triage", "resolver"),
    "tasks/queue_management": ("triage", "resolver"),
    "tasks/one_ticket": ("resolver",),
    "tasks/few_tickets": ("resolver",),
    "tasks/classify": ("triage",),
    "tasks/resolve": ("resolver",),
    "tasks/queue5": ("resolver",),
}
#: The one-ticket tasks a GRPO group compares rollouts on (the seeds' six and the GRPO presets).
GRPO_TASKS: tuple[str, ...] = (
    "tasks/order_status", "tasks/refund", "tasks/payment_failure", "tasks/ticket_classify",
    "tasks/ticket_resolve", "tasks/queue_management", "tasks/one_ticket", "tasks/few_tickets",
)


def task_roles(task: str, default: tuple[str, ...] = ("resolver",)) -> tuple[str, ...]:
    """The roles the agent of ``task`` plays (``default`` for a scenario that is not a named task)."""
    return TASK_ROLES.get(task, default)


def task_session(
    task: str,
    seed: int | None = None,
    *,
    roles: tuple[str, ...] | None = None,
    colleagues: Colleagues = "heuristic",
    overrides: Mapping[str, Any] | None = None,
    max_retries: int = 2,
) -> TextSession:
    """A :class:`TextSession` of ``task`` with the task's roles (unless ``roles`` is given)."""
    return TextSession(
        task, seed, roles=roles or task_roles(task), colleagues=colleagues, overrides=overrides,
        max_retries=max_retries,
    )
