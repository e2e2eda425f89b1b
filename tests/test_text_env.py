"""The language interface as a PettingZoo AEC environment: Text spaces, JSON tool calls, refusals."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import numpy as np
import pytest
from gymnasium.spaces import Text
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test
from pettingzoo.test.seed_test import check_environment_deterministic

from csr_marl.config.domain import FACT_REVEALED_BY
from csr_marl.config.loading import load_ticket_bank
from csr_marl.text import ToolCallError
from csr_marl.text.pettingzoo import (
    OBSERVATION_MAX_LENGTH,
    TextContactCenterEnv,
    parse_action,
    text_env,
)

SHORT = {"horizon_minutes": 45}


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)  # as a model writes


def test_pettingzoo_api_test_on_a_short_day() -> None:
    """The fast suite's api_test: the same checks on a 45-minute day, fewer cycles (the full day is slow)."""
    env = text_env(**SHORT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Text spaces by design, as below
        api_test(env, num_cycles=100)


@pytest.mark.slow
def test_pettingzoo_api_test_on_the_default_constructor() -> None:
    """Random Text actions are refused (never raised on) and the day still moves on to its end."""
    env = text_env()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "should be Box or Discrete", "not a NumPy array": Text by design
        api_test(env, num_cycles=1000)
    assert env.unwrapped.possible_agents[:3] == ["triage_0", "triage_1", "resolver_0"]


def test_random_text_actions_are_refused_and_the_episode_ends() -> None:
    env = text_env(seed=3, **SHORT)
    env.reset(seed=3)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(i)
    finished, refusals, steps = set(), 0, 0
    for agent in env.agent_iter(20_000):
        obs, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(obs)
        if terminated or truncated:
            finished.add(agent)
            env.step(None)
            continue
        assert info["decision_due"] and info["tools"]
        refusals += obs.startswith("Your last call was refused:")
        env.step(env.action_space(agent).sample())
        steps += 1
    assert not env.agents and finished == set(env.possible_agents)  # everyone truncated at the end
    result = env.unwrapped.session.result
    assert result.end_minute == pytest.approx(45.0)
    assert result.flow["arrived"] > 0 and result.reward_components["illegal_action"] < 0
    assert refusals > steps / 2  # each decision: two retries, then the fallback


def test_seeded_runs_are_deterministic() -> None:
    # PettingZoo's own seed check (random actions from seeded spaces) ...
    check_environment_deterministic(text_env(**SHORT), text_env(**SHORT), num_cycles=20)
    # ... and the same seed with the same (partly valid) calls gives the same observations.
    def run(seed: int) -> list[tuple[Any, ...]]:
        env = text_env(**SHORT)
        env.reset(seed=seed)
        rng = np.random.default_rng(0)
        seen = []
        for agent in env.agent_iter(400):
            obs, reward, terminated, truncated, info = env.last()
            seen.append((agent, str(obs), reward, info["tools"], info["reward_components"].tolist()))
            if terminated or truncated:
                env.step(None)
            elif rng.random() < 0.3:
                env.step("not json")
            else:
                env.step(_any_legal_call(info, rng))
        return seen

    first = run(5)
    assert data_equivalence(first, run(5))
    assert not data_equivalence(first, run(6))


def _any_legal_call(info: dict[str, Any], rng: np.random.Generator) -> str:
    """A valid call of a random offered tool, its arguments filled from the schema."""
    spec = info["tools"][rng.integers(len(info["tools"]))]["function"]
    arguments = {}
    for key, schema in spec["parameters"]["properties"].items():
        if "enum" in schema:
            arguments[key] = schema["enum"][rng.integers(len(schema["enum"]))]
        elif schema["type"] == "number":
            arguments[key] = 10.0
        else:
            arguments[key] = "Thanks for your patience."
    return json.dumps({"name": spec["name"], "arguments": arguments})


def _scripted(obs: str, info: dict[str, Any], playbook: dict[str, Any], asked: set[int]) -> str:
    """A resolver that reads its observation: ask the customer once, run the diagnostics, do what the
    playbook says about what they found, then answer."""
    offered = {tool["function"]["name"]: tool for tool in info["tools"]}
    if "pick_ticket" in offered:
        ids = offered["pick_ticket"]["function"]["parameters"]["properties"]["ticket_id"]["enum"]
        return call("pick_ticket", ticket_id=ids[0])
    ticket = int(re.search(r"Ticket #(\d+)", obs).group(1))
    if ticket not in asked:
        asked.add(ticket)
        return call("ask_customer", question="Could you tell me what you see on your card, tracking page or café ☕ app?")
    done_line = re.search(r"^Steps done: (.*)\.$", obs, re.M)
    done = set(done_line.group(1).split(", ")) if done_line else set()
    found_line = re.search(r"^Your tools found: (.*)\.$", obs, re.M)
    found = dict(re.findall(r"(\w+) = (\w+)", found_line.group(1))) if found_line else {}
    for tool in FACT_REVEALED_BY.values():
        if tool not in done:
            return call(tool)
    for fact, value in sorted(found.items()):
        entry = playbook.get(fact, {}).get(value)
        for step in entry.steps if entry is not None else ():
            if step not in done and step in offered:
                amount = re.search(r"\$(\d+(?:\.\d\d)?)", obs)
                return call(step, amount=float(amount.group(1)) if amount else 20.0) if step == "initiate_refund" else call(step)
    return call("respond_user", message="Thanks for waiting: I looked into it and " + ", ".join(sorted(done)) + " is done.")


def test_a_scripted_agent_resolves_tickets_through_json_tool_calls() -> None:
    env = text_env("tasks/resolve", seed=0, horizon_minutes=240)
    env.reset(seed=0)
    playbook = load_ticket_bank(env.unwrapped.scenario.tickets.bank).playbook
    asked: set[int] = set()
    replies, rewards, echoed = [], 0.0, 0
    for agent in env.agent_iter(5_000):
        obs, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(obs)  # the café and the cup were transliterated
        assert not obs.startswith("Your last call was refused")  # every call is valid
        rewards += reward
        echoed += "cafe ? app" in obs  # the question as the agent wrote it, transliterated
        if "customer_reply" in info:
            replies.append(info["customer_reply"])
            assert info["customer_reply"] in obs  # the customer's answer joins the conversation
        if terminated or truncated:
            env.step(None)
            continue
        env.step(_scripted(obs, info, playbook, asked))
    flow = env.unwrapped.session.result.flow
    assert flow["resolved"] >= 10 and flow["resolved"] >= 0.75 * (flow["resolved"] + flow["closed_unresolved"])
    assert len(replies) == len(asked) and all(replies)
    assert rewards > 0 and echoed


def test_a_refusal_is_shown_to_the_agent_that_made_it() -> None:
    env = text_env(seed=1, **SHORT)  # every role played: turns pass between agents
    env.reset(seed=1)
    seen_handover = False
    for _ in range(300):
        agent = env.agent_selection
        if env.truncations[agent] or env.terminations[agent]:
            break
        for attempt in range(3):  # max_retries=2: the third refusal takes the fallback
            env.step("{oops")
            if attempt < 2:
                obs = env.observe(agent)
                assert env.agent_selection == agent and obs.startswith("Your last call was refused: the action is not valid JSON")
                assert env.rewards[agent] == pytest.approx(-0.1)
        nxt = env.agent_selection
        if nxt != agent and not env.truncations.get(nxt):
            seen_handover = True
            assert "fallback was taken" in env.observe(agent)
            assert env.observe(agent).startswith("Your last call was refused")
            assert not env.observe(nxt).startswith("Your last call was refused")
            assert nxt in env.observe(nxt)
            break
    assert seen_handover


def test_long_observations_are_cut_to_the_space() -> None:
    env = text_env("tasks/resolve", seed=0, horizon_minutes=240)
    env.reset(seed=0)
    agent = env.agent_selection
    for i in range(5):
        env.step(call("ask_customer", question=f"Question {i}: " + "is it the order? " * 230))
    obs = env.observe(agent)
    assert len(obs) <= OBSERVATION_MAX_LENGTH and env.observation_space(agent).contains(obs)
    assert "characters cut" in obs and obs.rstrip().endswith("one tool call.")


def test_spaces_are_text_over_the_bank_and_printable_ascii() -> None:
    env = text_env("tasks/resolve", **SHORT)
    assert env.possible_agents == ["resolver_0"]  # the task staffs one resolver and nobody else
    space = env.observation_space("resolver_0")
    assert isinstance(space, Text) and isinstance(env.action_space("resolver_0"), Text)
    assert space is env.observation_space("resolver_0")
    assert set("{}\"':,.$#\n") <= space.character_set
    assert env.action_space("resolver_0").contains(call("respond_user", message="Refunded $84.99, order #4821357."))


@pytest.mark.parametrize(
    "action,why",
    [
        ("check_payment", "not valid JSON"),
        ('["check_payment"]', "not an object"),
        ('{"name": "check_payment", "args": {}}', "unexpected key"),
        ('{"arguments": {}}', 'needs "name"'),
        ('{"name": "respond_user", "arguments": ["hi"]}', "must be a JSON object"),
    ],
)
def test_parse_action_refuses_what_is_not_a_tool_call(action: str, why: str) -> None:
    with pytest.raises(ToolCallError, match=re.escape(why)):
        parse_action(action)


def test_parse_action_accepts_objects_strings_and_no_arguments() -> None:
    assert parse_action('{"name": "check_payment"}') == ("check_payment", None)
    assert parse_action('{"name": "respond_user", "arguments": {"message": "hi"}}') == ("respond_user", {"message": "hi"})
    assert parse_action('{"name": "respond_user", "arguments": "{\\"message\\": \\"hi\\"}"}')[1] == '{"message": "hi"}'


def test_misuse_raises_one_clear_error() -> None:
    env = text_env("tasks/resolve", **SHORT)
    with pytest.raises(Exception, match="reset"):
        env.step(call("check_payment"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="JSON tool call as a string"):
        env.step(3)
    with pytest.raises(ValueError, match="staffs none"):
        TextContactCenterEnv("tasks/resolve", roles=("triage",), colleagues={"resolver": "heuristic"})
    with pytest.raises(ValueError, match="render_mode"):
        TextContactCenterEnv("tasks/resolve", render_mode="rgb_array")


def test_render_ansi_returns_the_selected_agents_observation() -> None:
    env = text_env("tasks/resolve", seed=0, render_mode="ansi", **SHORT)
    env.reset(seed=0)
    assert env.render() == str(env.observe(env.agent_selection))


def test_the_text_env_is_offered_beside_the_vector_envs() -> None:
    import csr_marl
    from csr_marl import text

    assert csr_marl.text_env is text.text_env and csr_marl.TextSession is text.TextSession


def test_a_lookup_shows_the_record_behind_its_finding_per_ticket() -> None:
    """The payment lookup shows the capture dates and transaction numbers: in the turn's ticket and in
    its text, the same for the same seed, other values for another seed (what a reply must read)."""
    from csr_marl.text.tasks import task_session

    def record(seed: int) -> tuple[dict[str, str], str]:
        session = task_session("tasks/payment_failure")
        session.reset(seed=seed)
        turn = session.step("check_payment", {}).turn
        return turn.ticket.fact_details, turn.text

    details, text = record(5)
    assert set(details) == {"payment_status"} and re.search(r"\d{6}", details["payment_status"])
    assert details["payment_status"] in text
    assert record(5)[0] == details and record(6)[0] != details
