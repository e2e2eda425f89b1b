"""What travels over the wire: a tool call in, a turn of text and tools out, and the episode's state.

These are the OpenEnv framework's own ``Action`` / ``Observation`` / ``State`` models (pydantic), so
the framework publishes their JSON schemas at ``/schema`` and its clients validate against them.
"""

from __future__ import annotations

from typing import Any

from .deps import require_serve_extra

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.env_server.types import Action, Observation, State  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402


class ToolCallAction(Action):
    """One tool call answering the pending turn, as a chat model emits it.

    ``arguments`` is a JSON object, or the JSON string a chat-completions ``tool_call`` carries
    (passed through as is). A call that is unknown, malformed or not legal now is not a protocol
    error: the next observation's ``error`` says why and the same decision is asked again.
    """

    tool: str = Field(description="the name of one of the tools offered in the last observation")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="the tool's arguments: a JSON object or a JSON-encoded string"
    )


class TicketFields(BaseModel):
    """A ticket as staff see it, field by field (hidden facts and true labels never appear)."""

    ticket_id: int = Field(description="the ticket's id in this episode")
    customer_name: str = Field(description="the customer's first name, as they signed")
    tier: str = Field(description="basic, premium or enterprise")
    subject: str = Field(description="the subject line the customer wrote")
    body: str = Field(description="the message the customer wrote")
    declared_category: str = Field(description="the category the customer chose on the web form")
    declared_priority: str = Field(description="the urgency the customer chose")
    assigned_category: str | None = Field(default=None, description="triage's category (None before triage)")
    assigned_priority: str | None = Field(default=None, description="triage's priority (None before triage)")
    waiting_minutes: float = Field(default=0.0, description="minutes since the customer first wrote in")
    sentiment: str = Field(default="calm", description="the customer's mood: pleased, calm, impatient, upset, furious")
    returning: bool = Field(default=False, description="the customer wrote in before about this issue")
    escalated: bool = Field(default=False, description="the ticket went to the escalation desk")
    facts: dict[str, str] = Field(default_factory=dict, description="what the tools revealed")
    fact_details: dict[str, str] = Field(
        default_factory=dict, description="the record behind each revealed fact: its dates and record numbers"
    )
    amount_on_record: float | None = Field(
        default=None, description="the order's or payment's amount once a lookup ran: what a refund owes"
    )
    steps_done: list[str] = Field(default_factory=list, description="the tools used on the ticket so far")
    history: list[str] = Field(default_factory=list, description="what happened on the ticket, one line each")


class ContactCenterObservation(Observation):
    """The caller's turn: the decision as text and the tools legal now (chat-completions format),
    with the same content as typed fields (``ticket`` or, for a pick, ``queue``; ``legal_tools``).

    ``score`` is the episode score in [-1, 1] so far (below 0: damage done) (final once ``done``); ``done`` is
    ``terminated or truncated``: ``terminated`` when every ticket of the episode was closed,
    ``truncated`` when the shift's end cut it. Once the episode is over ``tools`` is empty and
    ``metadata`` holds ``kpis`` and ``team_return``. ``metadata["info"]`` passes on whatever the
    session reported for the step.
    """

    text: str = Field(default="", description="the decision, as a person at the desk would read it")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="the tools legal now, as a chat-completions `tools` list"
    )
    agent: str | None = Field(default=None, description="the staff member whose decision it is, e.g. resolver_0")
    role: str | None = Field(default=None, description="triage, resolver or escalation")
    phase: str | None = Field(default=None, description="triage, pick or work")
    error: str | None = Field(default=None, description="why the previous call was refused, if it was")
    ticket: TicketFields | None = Field(default=None, description="the ticket of a triage or work decision")
    queue: list[TicketFields] = Field(default_factory=list, description="the waiting tickets of a pick decision")
    legal_tools: list[str] = Field(default_factory=list, description="the names of the tools legal now")
    minute: float | None = Field(default=None, description="the simulated minute of the decision")
    score: float = Field(default=0.0, ge=-1.0, le=1.0, description="the episode score in [-1, 1] so far (below 0: damage)")
    terminated: bool = Field(default=False, description="the episode's work is finished (every ticket closed)")
    truncated: bool = Field(default=False, description="a limit ended the episode (the shift's end)")


class ContactCenterState(State):
    """The episode on the server: its id and step count (the framework's), and what it simulates."""

    scenario: str | None = Field(default=None, description="the scenario's name")
    seed: int | None = Field(default=None, description="the episode's root seed: reset with it to replay the day")
    sim_minute: float | None = Field(default=None, description="simulated minutes since the shift began")
    horizon_minutes: float | None = Field(default=None, description="the shift's length in minutes")
    roles: list[str] = Field(default_factory=list, description="the roles the client plays")
    colleagues: dict[str, str] = Field(
        default_factory=dict, description="the built-in policy answering each role the client does not play"
    )
    done: bool = Field(default=False, description="whether the day is over")
