"""Text the server can send back: every string a client sends must be encodable as UTF-8.

JSON lets a client write a lone surrogate (``"\\ud800"``, half of an emoji's escape pair; language
models cut such pairs in two), and Python reads it into a string that no reply can carry. The server
refuses such a message with one error frame (an HTTP 422), naming where the bad text is, and the
session goes on. A step's ``arguments`` sent as a JSON string are read the same way before the call
is taken.

    unencodable({"type": "step", "data": {"tool": "respond_user", "arguments": {"message": "\\ud800"}}})
    # 'text that is not Unicode at data.arguments.message (a lone surrogate, U+D800): send UTF-8 text ...'
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def unencodable(value: Any, where: str = "") -> str | None:
    """The one-line reason ``value`` (parsed JSON) holds text that UTF-8 cannot encode, or None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            bad = _first_bad(item)
            if bad is not None:
                return _reason(path, bad)
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _first_bad(key) is not None:
                    return _reason(f"{path or 'the message'} (a key)", _first_bad(key) or "")
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def has_surrogate_escape(text: str) -> bool:
    """Whether JSON text escapes a surrogate (``\\ud83d``): text decoded from UTF-8 holds no other kind."""
    return _SURROGATE_ESCAPE.search(text) is not None


def unencodable_json_text(text: str, where: str) -> str | None:
    """The same for JSON sent as a string (a tool call's ``arguments``): escapes of lone surrogates.

    Only text holding a surrogate escape is read (a valid pair reads as one character); text that is
    not JSON is left to the tool-call check, which refuses it as a call."""
    if not has_surrogate_escape(text):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return unencodable(parsed, where)


def _first_bad(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return text[error.start]
    return None


def _reason(path: str, char: str) -> str:
    return (f"text that is not Unicode at {path[:80] or 'the message'} (a lone surrogate, U+{ord(char):04X}): "
            "send UTF-8 text, with an emoji's escape as a whole pair or not at all")
