"""A decision's legal actions as tools with JSON-schema arguments, and a strict parser for tool calls.

Every phase of every role has its tools (OpenAI's function-calling format, which Anthropic-style and
most open chat servers accept too):

| phase | tools |
|---|---|
| triage | ``classify(category, priority, route)`` |
| pick | ``pick_ticket(ticket_id)`` -- one of the visible tickets' ids |
| resolver work | ``check_order_status()``, ``check_payment()``, ``initiate_refund(amount, [order_id])``, ``update_shipping()``, ``troubleshoot()``, ``reset_account()``, ``escalate_issue(reason)``, ``respond_user(message)``, ``ask_customer(question)`` |
| desk work | ``approve_refund(amount, [order_id])``, ``engineering_fix()``, ``fraud_review()``, ``account_recovery()``, ``legal_review()``, ``respond_user(message)``, ``return_to_resolver(reason)``, ``ask_customer(question)`` |

Only the tools legal now are offered. :func:`parse_call` checks a call strictly -- a tool offered now,
arguments a JSON object with exactly the schema's keys, of the right types and values -- and returns
the core's action index, or raises :class:`ToolCallError` with one line saying what is wrong. Any
input is either a call or a refusal, never another exception: a name that is not a string, arguments
longer than :data:`MAX_ARGUMENTS_CHARS` or nested deeper than :data:`MAX_ARGUMENTS_DEPTH`, keys that
are not strings, numbers too large for a float. A refusal quotes at most a few dozen characters of
what it was sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.domain import CATEGORIES, PRIORITIES, ROUTES
from ..sim.decisions import Decision, Phase, decode_triage, encode_triage
from ..sim.tickets import REFUND_TOOLS, Refund

#: The longest ``arguments`` JSON text read (a tool's longest argument is 4,000 characters).
MAX_ARGUMENTS_CHARS = 16_000
#: The deepest nesting of lists and objects read in ``arguments`` (a valid call has depth 1).
MAX_ARGUMENTS_DEPTH = 8
_QUOTE_CHARS = 60  # how much of a refused value a refusal quotes

_TEXT = {"type": "string", "minLength": 1, "maxLength": 4000}
_AMOUNT = {"type": "number", "minimum": 0, "description": "the amount in dollars"}
_ORDER = {"type": "string", "minLength": 1, "maxLength": 40,
          "description": "optional: the order or invoice the refund is for (it must be the customer's)"}
#: Arguments a tool takes but does not require.
OPTIONAL_ARGUMENTS = frozenset({"order_id"})

# name -> (description, properties); every property is required but those in OPTIONAL_ARGUMENTS.
_WORK_TOOLS: dict[str, tuple[str, dict[str, dict[str, Any]]]] = {
    "check_order_status": ("Look up the order: reveals its shipping status.", {}),
    "check_payment": ("Look up the payment: reveals what happened to the customer's money.", {}),
    "initiate_refund": (
        "Start a refund to the customer's original payment method: the amount on record, when the case owes one.",
        {"amount": _AMOUNT, "order_id": _ORDER},
    ),
    "update_shipping": ("Change or re-send the shipment (address, carrier, replacement).", {}),
    "troubleshoot": ("Run remote diagnostics on the device: reveals its state.", {}),
    "reset_account": ("Reset the customer's login or account state.", {}),
    "escalate_issue": (
        "Hand the ticket to the escalation desk (specialists).",
        {"reason": {**_TEXT, "description": "why the desk is needed"}},
    ),
    "respond_user": (
        "Answer the customer and close the ticket. Answering before the needed steps are done leaves "
        "the issue unresolved. The reply is graded: name the order and amount, say what was done, "
        "apologise to an upset customer, promise nothing that was not done.",
        {"message": {**_TEXT, "description": "the reply, as the customer will read it"}},
    ),
    "ask_customer": (
        "Ask the customer a question and wait for the reply (it takes the customer's time; asking "
        "the same thing twice annoys them).",
        {"question": {**_TEXT, "description": "the question, as the customer will read it"}},
    ),
    "approve_refund": ("Approve a refund beyond the resolvers' limits.", {"amount": _AMOUNT, "order_id": _ORDER}),
    "engineering_fix": ("Have engineering fix a defect on the customer's device or account.", {}),
    "fraud_review": ("Review a suspected fraudulent charge or account takeover.", {}),
    "account_recovery": ("Recover an account the customer cannot get into.", {}),
    "legal_review": ("Review a legal or compliance matter.", {}),
    "return_to_resolver": (
        "Send a ticket that does not need the desk back to the resolvers.",
        {"reason": {**_TEXT, "description": "why no specialist is needed"}},
    ),
}


_SAYS = {"respond_user": "message", "ask_customer": "question"}
#: The seeds' names for this contact center's labels, accepted in ``classify`` (unambiguous ones only).
LABEL_ALIASES: dict[str, dict[str, str]] = {"category": {"logistics": "shipping"}}


class ToolCallError(ValueError):
    """A tool call that cannot be taken as it is; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class ParsedCall:
    """A checked tool call: the core's action index and the call's arguments."""

    name: str
    action: int
    arguments: dict[str, Any]

    @property
    def text(self) -> str | None:
        """What the call says to the customer: ``respond_user``'s message, ``ask_customer``'s question."""
        return self.arguments.get(_SAYS.get(self.name, ""))

    @property
    def refund(self) -> Refund | None:
        """A refund's amount and order (``initiate_refund``, ``approve_refund``); None for other tools."""
        if self.name not in REFUND_TOOLS:
            return None
        return Refund(float(self.arguments["amount"]), self.arguments.get("order_id"))


def _spec(name: str, description: str, properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": [key for key in properties if key not in OPTIONAL_ARGUMENTS],
                "additionalProperties": False,
            },
        },
    }


def _offered(decision: Decision) -> dict[str, tuple[dict[str, Any], Any]]:
    """name -> (tool spec, how to turn checked arguments into the action index)."""
    if decision.phase is Phase.TRIAGE:
        routes = sorted({decode_triage(a)[2] for a in decision.legal}, key=ROUTES.index)
        properties = {
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "priority": {"type": "string", "enum": list(PRIORITIES)},
            "route": {"type": "string", "enum": routes, "description": "who works the ticket next"},
        }
        spec = _spec("classify", "Set the ticket's category and priority and route it.", properties)
        return {"classify": (spec, lambda args: encode_triage(args["category"], args["priority"], args["route"]))}
    if decision.phase is Phase.PICK:
        ids = [ticket.id for ticket in decision.slots]
        properties = {"ticket_id": {"type": "integer", "enum": ids, "description": "a waiting ticket's id"}}
        spec = _spec("pick_ticket", "Take one of the waiting tickets shown to work on it now.", properties)
        return {"pick_ticket": (spec, lambda args: ids.index(args["ticket_id"]))}
    offered = {}
    for action in decision.legal:
        name = decision.tool(action)
        description, properties = _WORK_TOOLS[name]
        offered[name] = (_spec(name, description, properties), lambda args, action=action: action)
    return offered


def tool_specs(decision: Decision) -> list[dict[str, Any]]:
    """The tools legal for ``decision`` now, as a chat-completions ``tools`` list."""
    return [spec for spec, _ in _offered(decision).values()]


def parse_call(decision: Decision, name: Any, arguments: Any) -> ParsedCall:
    """``name(arguments)`` checked against ``decision``'s tools; ``arguments`` a JSON string or a dict.

    Raises :class:`ToolCallError` (one line) for anything that is not a legal call, whatever the types.
    """
    offered = _offered(decision)
    if not isinstance(name, str) or name not in offered:
        raise ToolCallError(f"{quote(name)} is not a tool you can use now; use one of: {', '.join(offered)}")
    spec, to_action = offered[name]
    args = _arguments(name, arguments)
    for key, aliases in LABEL_ALIASES.items():
        value = args.get(key)
        if name == "classify" and isinstance(value, str) and value in aliases:
            args[key] = aliases[value]
    schema = spec["function"]["parameters"]
    properties: dict[str, dict[str, Any]] = schema["properties"]
    unknown = sorted(key if len(key) <= _QUOTE_CHARS else quote(key) for key in args if key not in properties)
    if unknown:
        more = f" and {len(unknown) - 3:,} more" if len(unknown) > 3 else ""  # a refusal stays one short line
        raise ToolCallError(f"{name}: unexpected argument(s) {', '.join(unknown[:3])}{more}; it takes {_signature(properties)}")
    missing = [key for key in schema["required"] if key not in args]
    if missing:
        raise ToolCallError(f"{name}: missing argument(s) {', '.join(missing)}; it takes {_signature(properties)}")
    for key, value in args.items():
        _check_value(name, key, value, properties[key])
    return ParsedCall(name, to_action(args), args)


def quote(value: Any, limit: int = _QUOTE_CHARS) -> str:
    """A short, safe rendering of anything a caller sent (no recursion, at most ``limit`` characters)."""
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, (bool, float)) or value is None:
        text = repr(value)
    elif isinstance(value, int):
        text = repr(value) if abs(value) < 10**limit else f"an integer of more than {limit} digits"
    else:
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _depth(value: Any) -> int:
    """How deeply lists and mappings nest in ``value`` (iteratively: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_ARGUMENTS_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _arguments(name: str, arguments: Any) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        arguments = read_json(arguments, f"{name}: arguments")
    if not isinstance(arguments, Mapping):
        raise ToolCallError(f"{name}: arguments must be a JSON object, got {type(arguments).__name__}")
    if _depth(arguments) > MAX_ARGUMENTS_DEPTH:
        raise ToolCallError(f"{name}: arguments are nested deeper than {MAX_ARGUMENTS_DEPTH} levels")
    strange = [key for key in arguments if not isinstance(key, str)]
    if strange:
        raise ToolCallError(f"{name}: argument names must be strings, got {quote(strange[0])}")
    return dict(arguments)


def read_json(
    text: str, what: str, limit: int = MAX_ARGUMENTS_CHARS, verb: str = "are", depth: int = MAX_ARGUMENTS_DEPTH
) -> Any:
    """JSON text a caller sent, read within bounds: too long, too deep or unreadable is a
    :class:`ToolCallError` saying ``"{what} {verb} ..."`` (never a ``RecursionError`` or ``ValueError``)."""
    if len(text) > limit:
        raise ToolCallError(f"{what} {verb} longer than {limit} characters")
    if _bracket_depth(text, depth) > depth:
        raise ToolCallError(f"{what} {verb} nested deeper than {depth} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolCallError(f"{what} {verb} not valid JSON ({error.msg} at position {error.pos})") from None
    except (ValueError, RecursionError):  # e.g. an integer beyond the interpreter's digit limit
        raise ToolCallError(f"{what} {verb} not JSON that can be read (a number too long?)") from None


def _bracket_depth(text: str, limit: int) -> int:
    """The deepest ``[``/``{`` nesting in JSON text, outside strings (checked before parsing it)."""
    if text.count("[") + text.count("{") <= limit:  # the usual case, at C speed: no deeper than that
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _check_value(name: str, key: str, value: Any, schema: Mapping[str, Any]) -> None:
    kind = schema["type"]
    if kind == "string":
        if not isinstance(value, str):
            raise ToolCallError(f"{name}: {key} must be a string, got {quote(value)}")
        if schema.get("minLength") and not value.strip():
            raise ToolCallError(f"{name}: {key} must not be empty")
        if len(value) > schema.get("maxLength", math.inf):
            raise ToolCallError(f"{name}: {key} is longer than {schema['maxLength']} characters")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolCallError(f"{name}: {key} must be an integer, got {quote(value)}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise ToolCallError(f"{name}: {key} must be a finite number, got {quote(value)}")
        if value < schema.get("minimum", -math.inf):
            raise ToolCallError(f"{name}: {key} must be at least {schema['minimum']}, got {quote(value)}")
    if "enum" in schema and not any(type(value) is type(choice) and value == choice for choice in schema["enum"]):
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        raise ToolCallError(f"{name}: {key} must be one of {choices}; got {quote(value)}")


def _finite(value: int | float) -> bool:
    """A number a float can hold (an integer of 400 digits cannot: ``math.isfinite`` would overflow)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _signature(properties: Mapping[str, Any]) -> str:
    names = [f"[{key}]" if key in OPTIONAL_ARGUMENTS else key for key in properties]
    return "(" + ", ".join(names) + ")" if properties else "no arguments"
