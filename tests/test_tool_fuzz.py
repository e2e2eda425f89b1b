"""Every malformed tool call is a refusal: one line, the usual penalty and retry count, never an exception.

Hypothesis throws names and arguments of every shape at :class:`TextSession`, the text env and the
chat-reply parser of ``csr-marl agent``: huge integers, deep nesting, non-string keys and names,
megabyte strings, JSON text that is not JSON. CI runs a few thousand cases; the long profile is
``CSR_MARL_TOOL_FUZZ_EXAMPLES=50000 python -m pytest tests/test_tool_fuzz.py``.
"""

from __future__ import annotations

import os
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extras import need

from csr_marl.text import TextSession
from csr_marl.text.pettingzoo import TextContactCenterEnv
from csr_marl.text.players import tool_call_of

EXAMPLES = int(os.environ.get("CSR_MARL_TOOL_FUZZ_EXAMPLES", "1500"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
TOOL_NAMES = ["check_payment", "initiate_refund", "respond_user", "ask_customer", "pick_ticket", "classify"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["x" * 5000, "y" * 1_000_000, "", " ", "billing", "urgent", "resolver"]),
)
# Keys of every kind: strings (the schema's own names among them), integers, None, tuples.
keys = st.one_of(st.sampled_from(["amount", "message", "question", "ticket_id", "category", "priority", "route", "reason"]),
                 st.text(max_size=10), st.integers(), st.none(), st.tuples(st.integers()))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(keys, inner, max_size=3)), max_leaves=8)
deep = st.integers(min_value=9, max_value=200_000).map(lambda n: "[" * n)
json_texts = st.one_of(
    deep, st.text(max_size=60), st.integers(min_value=4000, max_value=20_000).map(lambda n: '{"amount": ' + "1" * n + "}"),
    st.sampled_from(['{"amount": 1e999}', '{"amount": -1}', '{"message": "hi"}', "{}", "null", "[1, 2]", '{"1": 2}']),
)
names = st.one_of(st.sampled_from(TOOL_NAMES), st.text(max_size=20), scalars, st.lists(st.sampled_from(TOOL_NAMES), max_size=2))
arguments = st.one_of(values, json_texts, st.dictionaries(keys, values, max_size=4))


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("tool_fuzz")


@pytest.fixture(scope="module")
def session() -> TextSession:
    text = TextSession("tasks/resolve", seed=1, roles=("resolver",))
    text.reset(seed=1)
    return text


@pytest.mark.slow
@FUZZ
@given(name=names, args=arguments)
def test_text_session_refuses_or_takes_any_call(session: TextSession, name: object, args: object) -> None:
    if session.decision is None:
        session.reset()
    agent = session.decision.agent
    penalty = session.scenario.rewards.illegal_action
    before = session._refused
    result = session.step(name, args)  # must not raise, whatever the types
    if result.error is None:
        return  # a legal call: taken
    assert "\n" not in result.error and len(result.error) < 600, result.error
    if before < session.max_retries:  # a refusal with retries left: same agent, asked again, penalty paid
        assert result.turn is not None and result.turn.agent == agent and result.turn.error == result.error
        assert result.reward == pytest.approx(-abs(penalty)) or result.reward <= 0.0


@pytest.mark.slow
@FUZZ
@given(action=st.one_of(json_texts, st.builds(lambda n, a: _json_call(n, a), names, arguments)))
def test_text_env_refuses_or_takes_any_action(text_env: TextContactCenterEnv, action: str) -> None:
    agent = text_env.agent_selection
    while text_env.agents and (text_env.terminations[agent] or text_env.truncations[agent]):
        text_env.step(None)  # the day is over: the dead agents leave (PettingZoo's protocol)
        agent = text_env.agent_selection
    if not text_env.agents:
        text_env.reset()
    text_env.step(action)
    if text_env.agents:
        text_env.last()


@FUZZ
@given(content=st.one_of(json_texts, st.text(max_size=100), st.builds(lambda n, a: _json_call(n, a), names, arguments)))
def test_agent_reply_parser_never_raises(content: str) -> None:
    call = tool_call_of(types.SimpleNamespace(tool_calls=None, content=content))
    assert call is None or isinstance(call[0], str)


@pytest.fixture(scope="module")
def text_env() -> TextContactCenterEnv:
    env = TextContactCenterEnv("tasks/resolve", roles=("resolver",), seed=3)
    env.reset(seed=3)
    return env


def _json_call(name: object, args: object) -> str:
    """``{"name": ..., "arguments": ...}`` as JSON text, with whatever JSON can hold of the drawn values."""
    import json

    try:
        return json.dumps({"name": name, "arguments": args}, default=str)
    except (TypeError, ValueError, RecursionError):
        return json.dumps({"name": str(name)[:50], "arguments": str(args)[:50]})


# --- the reproductions, one by one --------------------------------------------------------------
REPRODUCTIONS = [
    ("initiate_refund", {"amount": 10**400}, "finite number"),
    ("initiate_refund", '{"amount": ' + "1" * 5000 + "}", "not JSON that can be read"),
    ("respond_user", "[" * 100_000, "longer than"),
    ("respond_user", "[" * 1_000, "nested deeper"),
    ("respond_user", {1: "x"}, "argument names must be strings"),
    (["respond_user"], {}, "is not a tool you can use now"),
    ("respond_user", {"message": "m" * 1_000_000}, "longer than 4000"),
    ("x" * 1_000_000, None, "is not a tool you can use now"),
]


@pytest.mark.parametrize(("name", "args", "why"), REPRODUCTIONS, ids=[r[2] for r in REPRODUCTIONS])
def test_each_reproduction_is_a_refusal_with_penalty_and_retry(name: object, args: object, why: str) -> None:
    session = TextSession("tasks/resolve", seed=1, roles=("resolver",))
    first = session.reset(seed=1)
    assert first is not None and first.phase == "work"
    result = session.step(name, args)
    assert result.error is not None and why in result.error and len(result.error) < 400
    assert result.turn is not None and result.turn.agent == first.agent and not result.done
    assert result.reward == pytest.approx(session.scenario.rewards.illegal_action)
    # The retry count runs as for any refusal: after max_retries + 1 the fallback is taken.
    for _ in range(session.max_retries):
        result = session.step(name, args)
    assert "the fallback was taken" in (result.turn.error if result.turn is not None else result.error or "") or result.done


def test_text_env_refuses_a_hundred_thousand_brackets() -> None:
    env = TextContactCenterEnv("tasks/resolve", roles=("resolver",), seed=1)
    env.reset(seed=1)
    agent = env.agent_selection
    env.step("[" * 100_000)
    observation, reward, *_ = env.last()
    assert env.agent_selection == agent and observation.startswith("Your last call was refused: the action is longer")
    assert reward < 0


def test_agent_reply_of_a_hundred_thousand_brackets_is_no_call() -> None:
    assert tool_call_of(types.SimpleNamespace(tool_calls=None, content="[" * 100_000)) is None


def test_csr_marl_agent_survives_a_model_that_answers_brackets(tmp_path) -> None:
    need("openai")
    """The model answers ``"[" * 100000`` as content and as a tool call's arguments: refusals, exit 0."""
    import subprocess
    import sys

    from chat_server import ChatServer, Reply

    replies = iter(range(10**6))

    def brackets(body: dict) -> Reply:
        return Reply(content="[" * 100_000) if next(replies) % 2 else Reply(tool="check_payment", arguments="[" * 100_000)

    with ChatServer(brackets) as server:
        done = subprocess.run(
            [sys.executable, "-c", "from csr_marl.cli import app; app()", "agent", "tasks/resolve", "--roles", "resolver",
             "--base-url", server.url, "--model", "m", "--retries", "0", "--episodes", "1", "--max-turns", "6",
             "--out", str(tmp_path / "out")],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
        )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    steps = [line for line in done.stdout.splitlines() if line.startswith("[STEP]")]
    assert steps and all("error=" in line and "error=null" not in line for line in steps), steps[:3]
