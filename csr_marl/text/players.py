"""Who plays each role: a chat model, a person at the keyboard, a built-in policy or a trained checkpoint.

    team = parse_team("resolver=llm,triage=random,escalation=checkpoint:runs/ppo/checkpoint.pt")
    # {"triage": "random", "resolver": "llm", "escalation": "checkpoint:runs/ppo/checkpoint.pt"}

``llm`` and ``human`` roles are played through :class:`~csr_marl.text.TextSession` turns (text in,
one tool call out): :class:`ChatPlayer` asks an OpenAI-compatible endpoint with native tool calling,
:class:`HumanPlayer` reads ``name {json arguments}`` lines. Built-in policies and checkpoints answer
the core's decisions directly, as the session's colleagues.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from ..config.domain import ROLES
from ..policies.base import policy_names
from ..sim.decisions import Decision
from .endpoint import Endpoint, EndpointError
from .observation import ROLE_BRIEF
from .session import Turn
from .tools import ToolCallError, read_json

LLM, HUMAN = "llm", "human"
CHECKPOINT = "checkpoint:"
MAX_REPLY_CHARS = 64_000  # a reply longer than this is not read as a JSON tool call
NO_TOOL_CALL = "(no_tool_call)"  # not a tool: the session refuses it like any unusable call
ToolCall = tuple[str, Any]  # (tool name, arguments as a JSON string or a dict)
Player = Callable[[Turn], ToolCall]

SYSTEM_RULES = (
    "Each user message shows one decision you must take now. Answer it with exactly one call to one of "
    "the tools offered, with arguments that match the tool's schema. What you write to the customer "
    "goes in respond_user's message: name the steps you took and what they found."
)
NUDGE = "You did not call a tool. Answer with exactly one call to one of the tools offered."


def system_prompt(role: str) -> str:
    """The role's brief and the rules of the game, the same for every turn of the role."""
    return f"{ROLE_BRIEF[role]}\n\n{SYSTEM_RULES}"


class ChatPlayer:
    """A chat model behind an OpenAI-compatible endpoint, asked once per turn with the turn's tools.

    Each request is the role's system prompt and the turn's text: the text already carries the
    ticket's story (steps done, what the tools found, the conversation), so the context stays bounded
    however long the shift. ``tool_choice="required"`` is asked for; a server that refuses it
    (HTTP 400) is asked with ``"auto"`` from then on, and a reply without a tool call is asked once
    more with a nudge. A reply that still has no tool call comes back as :data:`NO_TOOL_CALL`.
    ``sampling_seed`` (set per trial by the runner) is sent as the request's ``seed``.
    """

    def __init__(self, endpoint: Endpoint, *, temperature: float | None = None, max_tokens: int | None = None) -> None:
        self.endpoint = endpoint
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.tool_choice = "required"
        self.sampling_seed: int | None = None
        self.requests = 0

    def __call__(self, turn: Turn) -> ToolCall:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(turn.role)},
            {"role": "user", "content": turn.text},
        ]
        message = self._ask(messages, turn.tools)
        call = tool_call_of(message)
        if call is None:
            messages += [{"role": "assistant", "content": message.content or ""}, {"role": "user", "content": NUDGE}]
            call = tool_call_of(self._ask(messages, turn.tools))
        return call if call is not None else (NO_TOOL_CALL, None)

    def _ask(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        request: dict[str, Any] = {"messages": messages, "tools": tools}
        for key, value in (("temperature", self.temperature), ("max_tokens", self.max_tokens), ("seed", self.sampling_seed)):
            if value is not None:
                request[key] = value
        self.requests += 1
        try:
            reply = self.endpoint.complete(tool_choice=self.tool_choice, **request)
        except EndpointError as error:
            if error.status != 400 or self.tool_choice != "required":
                raise
            self.tool_choice = "auto"  # e.g. vLLM without --tool-call-parser support for "required"
            self.requests += 1
            reply = self.endpoint.complete(tool_choice=self.tool_choice, **request)
        if not getattr(reply, "choices", None):
            raise EndpointError(f"the chat endpoint at {self.endpoint.base_url} answered without choices")
        return reply.choices[0].message


def tool_call_of(message: Any) -> ToolCall | None:
    """The first tool call of an assistant message: native ``tool_calls``, else a JSON object
    ``{"name": ..., "arguments": ...}`` written as the content (servers without a tool parser)."""
    calls = getattr(message, "tool_calls", None) or []
    for call in calls:
        function = getattr(call, "function", None)
        if function is not None and getattr(function, "name", None):
            return function.name, function.arguments
    content = (getattr(message, "content", None) or "").strip()
    if content.startswith("```"):
        content = content.strip("`").removeprefix("json").strip()
    try:
        data = read_json(content, "the reply", MAX_REPLY_CHARS)
    except ToolCallError:  # prose, or JSON too long, deep or odd to be a call: no call
        return None
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        return data["name"], data.get("arguments", data.get("parameters"))
    return None


class HumanPlayer:
    """A person at the keyboard: reads the turn, types ``tool_name {"argument": "value"}``."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def __call__(self, turn: Turn) -> ToolCall:
        out = self.stdout
        out.write(f"\n{turn.text}\n\nTools:\n")
        for spec in turn.tools:
            function = spec["function"]
            out.write(f"  {function['name']} {json.dumps(function['parameters']['properties'])}\n")
        while True:
            out.write("your call> ")
            out.flush()
            line = self.stdin.readline()
            if not line:
                raise EOFError("standard input closed before the day was over")
            name, _, arguments = line.strip().partition(" ")
            if name:
                return name, arguments.strip() or None


def parse_team(
    agents: str | None = None, roles: str | None = None, default_roles: tuple[str, ...] = ROLES
) -> dict[str, str]:
    """Who plays each role, from ``--agents role=player,...`` and ``--roles role,...`` (the model's).

    A player is ``llm``, ``human``, a built-in policy name or ``checkpoint:PATH``. Without either
    option the model plays ``default_roles`` (a named task's learning roles, every role for another
    scenario); roles nobody names are played by the heuristic.
    """
    model_roles = _role_list(roles) if roles else []
    named: dict[str, str] = {}
    for item in (agents or "").split(","):
        if not item.strip():
            continue
        role, sep, player = (part.strip() for part in item.partition("="))
        if not sep or not player:
            raise ValueError(f"--agents {item.strip()!r}: expected ROLE=PLAYER, e.g. resolver=llm")
        _check_role(role, "--agents")
        if role in named:
            raise ValueError(f"--agents: {role} is given twice")
        if role in model_roles and player != LLM:
            raise ValueError(f"--roles says the model plays {role}, --agents says {player}")
        named[role] = check_player(player)
    if not model_roles and not named:
        model_roles = list(default_roles)
    return {role: named.get(role, LLM if role in model_roles else "heuristic") for role in ROLES}


def check_player(player: str) -> str:
    """``player`` if it names a kind of player (a checkpoint's file is checked when it is loaded)."""
    if player in (LLM, HUMAN) or player in policy_names():
        return player
    if player.startswith(CHECKPOINT) and player.removeprefix(CHECKPOINT):
        return player
    raise ValueError(
        f"unknown player {player!r}: use llm, human, checkpoint:PATH or a built-in policy ({', '.join(policy_names())})"
    )


def turn_roles(team: Mapping[str, str]) -> tuple[str, ...]:
    """The roles played through text turns (``llm`` and ``human``)."""
    return tuple(role for role in ROLES if team[role] in (LLM, HUMAN))


def colleagues(team: Mapping[str, str], scenario: Any) -> dict[str, str | Callable[[Decision], int]]:
    """The session's colleagues: built-in names as they are, checkpoints loaded (``train`` extra)."""
    out: dict[str, str | Callable[[Decision], int]] = {}
    for role, player in team.items():
        if player in (LLM, HUMAN):
            continue
        if player.startswith(CHECKPOINT):
            from ..train import load_checkpoint_policy  # torch: only when a checkpoint plays

            out[role] = load_checkpoint_policy(_checkpoint_file(player), scenario)
        else:
            out[role] = player
    return out


def describe_team(team: Mapping[str, str]) -> str:
    """``triage=heuristic,resolver=llm,escalation=random``: the team as the command line writes it."""
    return ",".join(f"{role}={team[role]}" for role in ROLES)


def _checkpoint_file(player: str) -> str:
    path = Path(player.removeprefix(CHECKPOINT))
    if not path.is_file():
        raise ValueError(f"{player}: no checkpoint file at {path} (give checkpoint:DIR/checkpoint.pt)")
    return str(path)


def _role_list(roles: str) -> list[str]:
    names = [role.strip() for role in roles.split(",") if role.strip()]
    if not names:
        raise ValueError("--roles: give one or more of " + ", ".join(ROLES))
    for role in names:
        _check_role(role, "--roles")
    return names


def _check_role(role: str, option: str) -> None:
    if role not in ROLES:
        raise ValueError(f"{option}: unknown role {role!r}; roles are {', '.join(ROLES)}")
