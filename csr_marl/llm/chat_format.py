"""The tool-calling chat format of SmolLM2's instruct models, as a chat template and a parser.

SmolLM2's instruct models were tuned for function calling on Argilla's Synth-APIGen data: the system
message lists the tools as JSON inside ``<tools>...</tools>`` and asks for the calls as one JSON list
inside ``<tool_call>...</tool_call>``, and the model answers::

    <tool_call>[{"name": "check_payment", "arguments": {}}]</tool_call>

A tool's result comes back as a user turn wrapped in ``<tool_response>...</tool_response>``. The chat
format of the conversation is ChatML (``<|im_start|>role ... <|im_end|>``). The GGUF's own template
renders no tools, so :data:`CHAT_TEMPLATE` is the one every csr_marl path uses with such a model: the
text interface's local endpoint (:mod:`csr_marl.llm.local`), ``csr-marl agent`` through it, and TRL
(:func:`attach_parser` gives a tokenizer the parser TRL calls). :func:`parse_tool_calls` reads a
reply leniently (a lone object, a missing closing tag) and never raises.
"""

from __future__ import annotations

import json
import re
from typing import Any

OPEN, CLOSE = "<tool_call>", "</tool_call>"
END = "<|im_end|>"
TOOL_RULES = (
    "You can call the tools listed below. Answer with the calls you make as one JSON list inside "
    "<tool_call></tool_call> tags and nothing else, for example:\n"
    '<tool_call>[{"name": "tool_name", "arguments": {"argument": "value"}}]</tool_call>'
)

# Tools are rendered compactly (one JSON object per line, the function part only) to keep prompts
# short for a small model on a CPU. Every message ends with <|im_end|> and a newline, so an earlier
# message renders the same whatever follows (TRL's multi-turn training needs a prefix-preserving template).
_SCHEMA_LINE = "{{ (tool['function'] if tool['function'] is defined else tool) | tojson }}\n"
# A signature line: the tool's name, its description's first sentence, and each argument's type (its
# choices, "optional" where it is not required) and description: about half the schema lines' tokens.
_SIGNATURE_LINE = (
    "{% set f = tool['function'] if tool['function'] is defined else tool %}"
    "{% set p = f['parameters'] if f['parameters'] is defined and f['parameters'] else {} %}"
    "{% set props = p['properties'] if p['properties'] is defined and p['properties'] else {} %}"
    "{% set required = p['required'] if p['required'] is defined and p['required'] else [] %}"
    "{\"name\": {{ f['name'] | tojson }}, \"description\": "
    "{{ (f['description'] or '').split(': ')[0].split('. ')[0].rstrip('.') | tojson }}, \"arguments\": {{ '{' }}"
    "{% for key, spec in props.items() %}{% if not loop.first %}, {% endif %}"
    "{{ key | tojson }}: {{ ((spec['type'] if spec['type'] is defined else 'string')"
    " ~ (', one of ' ~ spec['enum'] | join('|') if spec['enum'] is defined and spec['enum'] else '')"
    " ~ ('' if key in required else ', optional')"
    " ~ (': ' ~ spec['description'] | replace('optional: ', '', 1)"
    " if spec['description'] is defined and spec['description'] else '')) | tojson }}"
    "{% endfor %}}}\n"
)
#: How a template lists the tools: "schemas" (each tool's JSON schema, the default) or
#: "signatures" (one short line per tool: a payment_failure prompt of 736 tokens instead of 1,087).
#: The signature line's first sentence is cut as :func:`compact_tools` cuts it (Jinja cannot call it:
#: TRL hands the template the tools' schemas, not our Python).
TOOL_FORMATS = ("schemas", "signatures")


def chat_template(tool_format: str = "schemas") -> str:
    """The chat template, its tools listed as ``tool_format`` (:data:`TOOL_FORMATS`)."""
    if tool_format not in TOOL_FORMATS:
        raise ValueError(f"tool_format must be one of {', '.join(TOOL_FORMATS)}, got {tool_format!r}")
    line = _SCHEMA_LINE if tool_format == "schemas" else _SIGNATURE_LINE
    return (
        "{% set ns = namespace(first=0) %}"
        "{% if tools %}"
        "<|im_start|>system\n"
        "{% if messages and messages[0]['role'] == 'system' %}{% set ns.first = 1 %}{{ messages[0]['content'] }}\n\n{% endif %}"
        + TOOL_RULES + "\n<tools>\n"
        "{% for tool in tools %}" + line + "{% endfor %}"
        "</tools><|im_end|>\n"
        "{% elif messages and messages[0]['role'] == 'system' %}{% set ns.first = 1 %}"
        "<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n"
        "{% endif %}"
        "{% for message in messages[ns.first:] %}"
        "{% if message['role'] == 'tool' %}"
        "<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n</tool_response><|im_end|>\n"
        "{% elif message['role'] == 'assistant' %}"
        "<|im_start|>assistant\n"
        "{% if message['tool_calls'] is defined and message['tool_calls'] %}"
        "<tool_call>["
        "{% for call in message['tool_calls'] %}"
        "{% set function = call['function'] if call['function'] is defined else call %}"
        "{% if not loop.first %}, {% endif %}"
        "{\"name\": {{ function['name'] | tojson }}, \"arguments\": "
        "{% if function['arguments'] is string %}{{ function['arguments'] }}"
        "{% else %}{{ (function['arguments'] or {}) | tojson }}{% endif %}}"
        "{% endfor %}]</tool_call>"
        "{% else %}{{ message['content'] or '' }}{% endif %}"
        "<|im_end|>\n"
        "{% else %}"
        "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endif %}"
        "{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


CHAT_TEMPLATE = chat_template()

_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)(?:" + re.escape(CLOSE) + r"|$)", re.DOTALL)
_DECODER = json.JSONDecoder()


def parse_tool_calls(text: str) -> list[dict[str, Any]]:
    """The calls in a reply, as ``[{"name": str, "arguments": dict}]``; ``[]`` when there is none.

    Reads every ``<tool_call>`` block (a JSON list of calls, or one call object; the closing tag may
    be missing when the reply was cut at the end-of-turn token). A call whose arguments are a JSON
    string is decoded; one whose arguments are not an object keeps them under ``arguments`` as given,
    for the session's strict checks to refuse with a reason.
    """
    calls: list[dict[str, Any]] = []
    for block in _BLOCK.findall(text.replace(END, "")):
        value = _first_json(block)
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _call(item)
            if call is not None:
                calls.append(call)
    return calls


def parse_assistant(text: str) -> dict[str, Any]:
    """An assistant message from a reply: ``content`` (the text outside the calls) and, when there
    are any, ``tool_calls`` in the OpenAI shape (``{"type": "function", "function": {...}}``)."""
    calls = parse_tool_calls(text)
    content = _BLOCK.sub("", text.replace(END, "")).strip()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"type": "function", "function": call} for call in calls]
    return message


def render_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """One call as the model writes it (the target of a supervised warm start)."""
    return f"{OPEN}[{json.dumps({'name': name, 'arguments': arguments})}]{CLOSE}"


def compact_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools' schemas with only what a model needs to write a call: each tool's name, its
    description's first sentence, and each parameter's type, enum and description (bounds and
    ``additionalProperties`` left out; the session still checks them). Shorter prompts for a small
    model on a CPU."""
    out = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {}
        properties = {
            key: {k: v for k, v in spec.items() if k in ("type", "enum", "description")}
            for key, spec in (parameters.get("properties") or {}).items()
        }
        compact: dict[str, Any] = {"type": "object", "properties": properties}
        if parameters.get("required"):
            compact["required"] = list(parameters["required"])
        description = (function.get("description") or "").split(": ")[0].split(". ")[0].rstrip(".")
        out.append({"type": "function", "function": {"name": function["name"], "description": description,
                                                      "parameters": compact}})
    return out


def attach_parser(tokenizer: Any, tool_format: str = "schemas") -> Any:
    """Give ``tokenizer`` the chat template (its tools listed as ``tool_format``: :func:`chat_template`)
    and a ``parse_response`` that reads this format, the method TRL's ``GRPOTrainer`` calls on each
    completion (it calls it when ``response_template`` is set, so a marker is set too). Returns the
    tokenizer."""
    tokenizer.chat_template = chat_template(tool_format)

    def parse_response(ids: Any, prefix: Any = None, tools: Any = None) -> dict[str, Any]:
        text = ids if isinstance(ids, str) else tokenizer.decode(ids, skip_special_tokens=False)
        return parse_assistant(text)

    tokenizer.parse_response = parse_response
    tokenizer.response_template = {"format": "smollm2-tool-call", "parser": "csr_marl.llm.chat_format"}
    return tokenizer


def _first_json(block: str) -> Any:
    block = block.strip()
    start = min((i for i in (block.find("["), block.find("{")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(block[start:])
    except json.JSONDecodeError:
        return None
    return value


def _call(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    if arguments is None:
        arguments = {}
    return {"name": item["name"].strip(), "arguments": arguments}
