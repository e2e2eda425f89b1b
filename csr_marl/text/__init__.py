"""The language interface: decisions as text, legal actions as tools with JSON-schema arguments.

    from csr_marl.text import TextSession
    session = TextSession("tasks/resolve", seed=0)
    turn = session.reset()
    print(turn.text, turn.tools)

:mod:`.observation` renders a decision as text, :mod:`.tools` offers its legal actions as tools and
parses tool calls strictly, :mod:`.session` runs a day with the caller playing some roles and built-in
policies the others. Pure Python: no model, server or network is needed.
"""

from __future__ import annotations

from .observation import describe
from .session import TextSession, TextStep, Turn
from .tools import ParsedCall, ToolCallError, parse_call, tool_specs

__all__ = ["ParsedCall", "TextSession", "TextStep", "ToolCallError", "Turn", "describe", "parse_call", "tool_specs"]
