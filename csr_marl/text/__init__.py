"""The language interface: decisions as text, legal actions as tools with JSON-schema arguments.

    from csr_marl.text import TextSession
    session = TextSession("tasks/resolve", seed=0)
    turn = session.reset()
    print(turn.text, turn.tools)

:mod:`.observation` renders a decision as text, :mod:`.tools` offers its legal actions as tools and
parses tool calls strictly, :mod:`.session` runs a day with the caller playing some roles and built-in
policies the others, :mod:`.pettingzoo` offers the same as a PettingZoo AEC environment with text
observation and action spaces. Pure Python: no model, server or network is needed. The LLM runner
(:mod:`.runner`, ``csr-marl agent``) and the judge (:mod:`.judge`) need the ``llm`` extra.
"""

from __future__ import annotations

from .observation import TicketView, describe, ticket_view
from .pettingzoo import TextContactCenterEnv, text_env
from .session import NoTurnError, TextSession, TextStep, Turn
from .tools import ParsedCall, ToolCallError, parse_call, tool_specs

__all__ = [
    "NoTurnError", "ParsedCall", "TextContactCenterEnv", "TextSession", "TextStep", "TicketView", "ToolCallError",
    "Turn", "describe", "parse_call", "text_env", "ticket_view", "tool_specs",
]
