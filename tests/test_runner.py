"""The LLM baseline runner, driven through the real ``openai`` client against a local chat server."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from extras import need

need("openai")

from chat_server import ChatServer, Reply, text, tool_call  # noqa: E402

from csr_marl import load_scenario  # noqa: E402
from csr_marl.text.endpoint import Endpoint  # noqa: E402
from csr_marl.text.passk import pass_hat_k  # noqa: E402
from csr_marl.text.players import NUDGE, HumanPlayer, parse_team, system_prompt  # noqa: E402
from csr_marl.text.runner import AgentRunner  # noqa: E402

DIAGNOSTICS = ("check_order_status", "check_payment", "troubleshoot")
# What a revealed value calls for (the ticket bank's playbook, as a support manual would say it).
FOLLOW_UP = {
    "delayed": "update_shipping", "delivered_not_received": "update_shipping", "lost": "initiate_refund",
    "damaged_in_transit": "update_shipping", "wrong_address": "update_shipping",
    "returned_to_sender": "update_shipping", "return_received": "initiate_refund",
    "duplicate_capture": "initiate_refund", "failed_but_captured": "initiate_refund",
    "billing_error": "initiate_refund", "refund_not_issued": "initiate_refund",
    "over_refund_limit": "initiate_refund", "needs_reset": "reset_account", "hardware_fault": "update_shipping",
}
RESOLVER_ONLY = parse_team("resolver=llm")
STEP = re.compile(r"^\[STEP\] step=(\d+) agent=(\S+) tool=(\S+) args=.* reward=(-?\d+\.\d\d) done=(true|false)( grade=\d\.\d\d)? error=(.*)$")


def playbook(body: dict) -> Reply:
    """A scripted model that reads the turn's text: check the fact tools offered, follow up on what
    they found, answer the customer naming the findings."""
    tools = {spec["function"]["name"]: spec["function"] for spec in body["tools"]}
    turn = body["messages"][-1]["content"]
    if "pick_ticket" in tools:
        return tool_call("pick_ticket", {"ticket_id": tools["pick_ticket"]["parameters"]["properties"]["ticket_id"]["enum"][0]})
    if "classify" in tools:
        category, priority = re.search(r"filed it as (\w+), urgency (\w+)", turn).groups()
        return tool_call("classify", {"category": category, "priority": priority, "route": "resolver"})
    done_line = re.search(r"Steps done: (.*)\.", turn)
    done = set(done_line.group(1).split(", ")) if done_line else set()
    found = re.search(r"Your tools found: (.*)\.", turn)
    facts = dict(item.split(" = ") for item in found.group(1).split("; ")) if found else {}
    for tool in DIAGNOSTICS:
        if tool in tools and tool not in done:
            return tool_call(tool)
    for value in facts.values():
        step = FOLLOW_UP.get(value)
        if step and step in tools and step not in done:
            return tool_call(step, {"amount": 25.0} if "refund" in step else {})
    findings = ", ".join(f"{k} is {v}" for k, v in facts.items()) or "nothing unusual"
    return tool_call("respond_user", {"message": f"Thanks for your patience. I checked: {findings}. It is taken care of."})


def hasty_on_odd_seeds(body: dict) -> Reply:
    """The playbook, except that with an odd sampling seed it answers even-numbered tickets at once."""
    ticket = re.search(r"Ticket #(\d+)", body["messages"][-1]["content"])
    if body.get("seed", 0) % 2 and ticket and int(ticket.group(1)) % 2 == 0 and "respond_user" in json.dumps(body["tools"]):
        return tool_call("respond_user", {"message": "Sorted, thanks!"})
    return playbook(body)


def runner(url: str, lines: list[str], team: dict[str, str] = RESOLVER_ONLY, **options) -> AgentRunner:
    return AgentRunner("tasks/resolve", team, endpoint=Endpoint.resolve(url, "scripted-model", max_retries=0), emit=lines.append, **options)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def agent_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "from csr_marl.cli import app; app()"
    return subprocess.run([sys.executable, "-c", code, "agent", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_scripted_model_plays_the_resolver_through_the_real_client() -> None:
    lines: list[str] = []
    with ChatServer(playbook) as server:
        report = runner(server.url, lines, grade_threshold=0.0).run(episodes=1)
    first = server.requests[0]
    assert first["model"] == "scripted-model" and first["tool_choice"] == "required"
    assert first["messages"][0] == {"role": "system", "content": system_prompt("resolver")}
    assert {"check_order_status", "check_payment", "troubleshoot", "respond_user"} <= {t["function"]["name"] for t in first["tools"]}
    assert first["messages"][1]["content"].startswith("You are a resolver")
    assert lines[0].startswith("[START] task=resolve episode=0 trial=0 seed=0/0 model=scripted-model")
    assert lines[-1].startswith("[END] success=")
    steps = [STEP.match(line) for line in lines[1:-1]]
    assert all(steps) and len(steps) == len(server.requests)  # one request, one tool call, one [STEP]
    assert [int(m.group(1)) for m in steps] == list(range(1, len(steps) + 1))
    assert {m.group(3) for m in steps} >= {"check_payment", "respond_user"} and {m.group(7) for m in steps} == {"null"}
    play = report.plays[0]
    assert play.steps == len(steps) and play.refused == 0
    resolved = [t for t in play.tickets if t.resolved]
    assert len(resolved) >= 0.6 * len(play.tickets) > 0  # the playbook resolves most tickets
    assert all(t.success == t.resolved for t in play.tickets)  # grade threshold 0: success = resolved
    assert play.record["resolved"] >= len(resolved)
    assert f"tickets={len(resolved)}/{len(play.tickets)}" in lines[-1]


def test_pass_hat_k_matches_a_hand_computation() -> None:
    assert pass_hat_k({"a": [True, True, False], "b": [True, False, False], "c": [True] * 3}, 1) == pytest.approx(2 / 3)
    assert pass_hat_k({"a": [True, True, False], "b": [True, False, False], "c": [True] * 3}, 2) == pytest.approx(4 / 9)
    assert pass_hat_k({"a": [True, True, False], "b": [True, False, False], "c": [True] * 3}, 3) == pytest.approx(1 / 3)
    lines: list[str] = []
    with ChatServer(hasty_on_odd_seeds) as server:
        report = runner(server.url, lines, grade_threshold=0.0).run(episodes=2, k=3)
    seeds = {(request["seed"]) for request in server.requests}
    assert len(seeds) == 6  # one sampling seed per (episode, try)
    tries: dict[tuple[int, int], list[bool]] = {}
    for play in report.plays:
        for ticket in play.tickets:
            tries.setdefault((ticket.episode, ticket.ticket_id), [False] * 3)[ticket.trial] = ticket.success
    by_hand = {j: sum(math.comb(sum(t), j) / math.comb(3, j) for t in tries.values()) / len(tries) for j in (1, 2, 3)}
    curve = report.pass_hat()["ticket"]
    assert curve == pytest.approx(by_hand)
    assert curve[1] > curve[3]  # the hasty tries fail tickets the careful ones resolve
    episodes = report.pass_hat()["episode"]
    wins = [sum(p.success for p in report.plays if p.episode == e) for e in (0, 1)]
    assert episodes[2] == pytest.approx(sum(math.comb(c, 2) / 3 for c in wins) / 2)


def test_a_malformed_call_and_a_reply_without_a_call_are_refused_by_the_session() -> None:
    def script(body: dict) -> Reply:
        number = len(server.requests)
        if number <= 2:
            return text("Let me think about which tool to use.")  # twice: the nudge does not help
        if number == 3:
            return tool_call("check_payment", '{"oops": ')  # malformed JSON arguments
        return playbook(body)

    lines: list[str] = []
    with ChatServer(script) as server:
        play = runner(server.url, lines, max_turns=4).play(0)
    nudged = server.requests[1]["messages"]
    assert nudged[-2]["role"] == "assistant" and nudged[-1] == {"role": "user", "content": NUDGE}
    first, second = STEP.match(lines[1]), STEP.match(lines[2])
    assert first.group(3) == "(no_tool_call)" and "is not a tool you can use now" in first.group(7)
    assert second.group(3) == "check_payment" and "not valid JSON" in second.group(7)
    penalty = load_scenario("tasks/resolve").rewards.illegal_action
    assert float(first.group(4)) == pytest.approx(penalty) and play.refused == 2
    assert server.requests[3]["messages"][1]["content"].startswith("Your last call was refused: check_payment: arguments are not valid JSON")
    assert lines[-1].endswith("refused=2 truncated=true") and play.steps == 4


def test_a_server_without_required_tool_choice_is_asked_with_auto() -> None:
    lines: list[str] = []
    with ChatServer(playbook, reject_required=True) as server:
        play = runner(server.url, lines, max_turns=6).play(0)
    assert [r["tool_choice"] for r in server.requests[:3]] == ["required", "auto", "auto"]
    assert play.steps == 6 and play.refused == 0 and play.truncated


def test_a_person_plays_from_standard_input() -> None:
    typed = io.StringIO('\nrefund_everything {}\ncheck_payment {}\ncheck_order_status\n')
    shown = io.StringIO()
    lines: list[str] = []
    team = parse_team("resolver=human")
    play = AgentRunner("tasks/resolve", team, emit=lines.append, max_turns=3, human=HumanPlayer(typed, shown)).play(0)
    assert "You are a resolver" in shown.getvalue() and "your call> " in shown.getvalue()
    assert "refund_everything" in lines[1] and "is not a tool you can use now" in lines[1]
    assert "tool=check_payment" in lines[2] and "tool=check_order_status" in lines[3] and play.refused == 1


def test_the_cli_plays_a_mixed_team_and_writes_the_baseline_table_and_pass_k(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ChatServer(playbook) as server:
        done = agent_cli(
            "standard_day", "--base-url", server.url, "--model", "scripted-model",
            "--agents", "resolver=llm,triage=random,escalation=heuristic", "--episodes", "2", "--k", "1",
            "--set", "horizon_minutes=40", "--set", "staffing.resolver=3", "--out", str(out), cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    stdout = done.stdout.splitlines()
    starts = [line for line in stdout if line.startswith("[START]")]
    assert len(starts) == 2 and all("team=triage:random,resolver:llm,escalation:heuristic" in line for line in starts)
    agents = {STEP.match(line).group(2) for line in stdout if line.startswith("[STEP]")}
    assert agents and all(agent.startswith("resolver_") for agent in agents)  # triage and desk are colleagues
    assert not any(t["function"]["name"] == "classify" for r in server.requests for t in r["tools"])
    assert len([line for line in stdout if line.startswith("[END]")]) == 2
    assert "| ticket |" in done.stdout and "pass^1" in done.stdout
    names = sorted(p.name for p in out.iterdir())
    assert names == ["agent_baseline.csv", "agent_baseline.json", "agent_baseline.md", "agent_passk.json", "agent_passk.md", "agent_tickets.csv"]
    table = list(csv.DictReader((out / "agent_baseline.csv").open()))
    assert len(table) == 1 and table[0]["policy"] == "agent" and table[0]["episodes"] == "2"
    assert list(table[0])[:5] == ["scenario", "split", "policy", "episodes", "team_return_mean"]
    passk = json.loads((out / "agent_passk.json").read_text())
    assert passk["team"] == {"triage": "random", "resolver": "llm", "escalation": "heuristic"}
    assert "C(c,k)/C(n,k)" in passk["success_rule"] and "0.25" in passk["success_rule"]
    tickets = list(csv.DictReader((out / "agent_tickets.csv").open()))
    assert len(tickets) == passk["tasks"]["ticket"]  # k = 1: one try per task
    share = sum(row["success"] == "True" for row in tickets) / len(tickets)
    assert passk["pass_hat_k"]["ticket"]["1"] == pytest.approx(share)
    for row in tickets:  # the success rule, row by row
        graded_ok = row["grade"] == "" or float(row["grade"]) >= 0.25
        assert (row["success"] == "True") == (row["resolved"] == "True" and graded_ok)


def test_a_dead_endpoint_is_one_line_and_exit_2(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = agent_cli("tasks/resolve", "--base-url", url, "--model", "m", "--retries", "0", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert done.returncode == 2
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"error: cannot reach the chat endpoint at {url}"), done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "resolver=gpt"], "unknown player 'gpt'"),
        (["--agents", "triage=llm"], "nobody to play"),
        (["--roles", "resolver", "--agents", "resolver=random"], "--roles says the model plays resolver"),
        (["--roles", "cashier"], "unknown role 'cashier'"),
        (["--k", "0"], "--k must be at least 1"),
        (["--base-url", "ftp://x"], "expected http(s)://"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    base = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "o")]
    done = agent_cli("tasks/resolve", *base, *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_the_cli_grades_replies_with_a_judge_model_on_the_same_endpoint(tmp_path: Path) -> None:
    """--judge-model: every reply the core grades goes to the judge; its score is the reply KPI."""

    def model_or_judge(body: dict) -> Reply:
        if body["model"] == "judge-model":
            return text(json.dumps({"facts": 0.1, "resolution": 0.1, "tone": 0.05, "reason": "fine"}))
        return playbook(body)

    out = tmp_path / "judged"
    with ChatServer(model_or_judge) as server:
        done = agent_cli(
            "tasks/resolve", "--base-url", server.url, "--model", "scripted-model", "--roles", "resolver",
            "--judge-model", "judge-model", "--episodes", "1", "--set", "horizon_minutes=90", "--out", str(out),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    judged = [r for r in server.requests if r["model"] == "judge-model"]
    assert judged and all("tools" not in r for r in judged)
    graded = [line for line in done.stdout.splitlines() if line.startswith("[STEP]") and " grade=" in line]
    assert graded and all(" grade=0.25 " in line for line in graded)
    row = json.loads((out / "agent_baseline.json").read_text())["scenarios"]["resolve"]
    assert row["reply_score_mean"]["mean"] == pytest.approx(0.25)


def test_a_named_task_plays_its_learning_roles_by_default() -> None:
    """``csr-marl agent tasks/refund`` without --roles: the model is the resolver, the team plays the desk."""
    from csr_marl.cli.agent import ROLES, task_roles

    assert parse_team(None, None, default_roles=task_roles("tasks/refund", default=ROLES)) == {
        "triage": "heuristic", "resolver": "llm", "escalation": "heuristic",
    }
    assert set(parse_team(None, None, default_roles=task_roles("standard_day", default=ROLES)).values()) == {"llm"}
