"""What travels over the wire: a tool call in, a turn of text and tools out, and the episode's state.

These are the OpenEnv framework's own ``Action`` / ``Observation`` / ``State`` models (pydantic), so
the framework publishes their JSON schemas at ``/schema`` and its clients validate against them.
"""

from __future__ import annotations

from typing import Any

from .deps import require_serve_extra

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.env_server.types import Action, Observation, State  # noqa: E402
from pydantic import Field  # noqa: E402


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


class ContactCenterObservation(Observation):
    """The caller's turn: the decision as text and the tools legal now (chat-completions format).

    Once the day is over ``done`` is true, ``tools`` is empty and ``metadata`` holds ``kpis`` and
    ``team_return``. ``metadata["info"]`` passes on whatever the session reported for the step.
    """

    text: str = Field(default="", description="the decision, as a person at the desk would read it")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="the tools legal now, as a chat-completions `tools` list"
    )
    agent: str | None = Field(default=None, description="the staff member whose decision it is, e.g. resolver_0")
    role: str | None = Field(default=None, description="triage, resolver or escalation")
    phase: str | None = Field(default=None, description="triage, pick or work")
    error: str | None = Field(default=None, description="why the previous call was refused, if it was")


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
