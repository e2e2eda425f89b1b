"""``csr-marl serve``: the real OpenEnv server on 127.0.0.1, driven by the framework's real clients.

One server process (the ``csr-marl serve`` command) serves every test here. A scripted agent that
reads the turn's text and calls the tools offered plays whole days over the WebSocket session, and
its episodes must equal the same agent's episodes on an in-process ``TextSession``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import need

need("openenv")

from csr_marl.serve.deps import require_serve_extra  # noqa: E402

require_serve_extra()  # the framework as `csr-marl serve` loads it: without the browser playground's toolkit
from openenv import GenericEnvClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from csr_marl.cli import app  # noqa: E402
from csr_marl.serve.client import ContactCenterClient, ToolCallAction  # noqa: E402
from csr_marl.text import TextSession  # noqa: E402
from csr_marl.whatif.store import json_safe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "tasks/resolve"

# --- a scripted agent that reads the text, as a careful new hire would -----------------------------
DIAGNOSTIC = {"billing": "check_payment", "shipping": "check_order_status", "technical": "troubleshoot"}
FOLLOW_UP = {  # what a revealed fact calls for (the ticket bank's playbook, as the agent learned it)
    "duplicate_capture": "initiate_refund", "failed_but_captured": "initiate_refund", "billing_error": "initiate_refund",
    "lost": "initiate_refund", "return_received": "initiate_refund", "delayed": "update_shipping",
    "delivered_not_received": "update_shipping", "damaged_in_transit": "update_shipping",
    "wrong_address": "update_shipping", "returned_to_sender": "update_shipping", "needs_reset": "reset_account",
    "hardware_fault": "update_shipping",
}


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("serve")


def scripted_call(text: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Pick a waiting ticket; ask the customer what they see; check the facts for its category; do
    what they call for; answer by name, naming the order."""
    offered = {tool["function"]["name"]: tool["function"] for tool in tools}
    if "pick_ticket" in offered:
        ids = offered["pick_ticket"]["parameters"]["properties"]["ticket_id"]["enum"]
        return "pick_ticket", {"ticket_id": ids[0]}
    category = re.search(r"filed it as (\w+)", text)
    steps = re.search(r"Steps done: (.*)\.", text)
    done = set(steps.group(1).split(", ")) if steps else set()
    found = re.search(r"Your tools found: (.*)\.", text)
    facts = dict(pair.split(" = ", 1) for pair in found.group(1).split("; ")) if found else {}
    if " replied: " not in text and "ask_customer" in offered:
        return "ask_customer", {"question": "Could you describe exactly what you see on your side?"}
    wanted = [DIAGNOSTIC.get(category.group(1) if category else "", "")] + [FOLLOW_UP.get(v, "") for v in facts.values()]
    for tool in wanted:
        if tool and tool not in done and tool in offered:
            if tool == "initiate_refund":
                amount = re.search(r"\$(\d+(?:\.\d\d)?)", text)
                return tool, {"amount": float(amount.group(1)) if amount else 0.0}
            return tool, {}
    order = re.search(r"#?(\d{6,})", text)
    closing = f" for order #{order.group(1)}." if order else "."
    name = re.search(r"Ticket #\d+ from (\w+)", text)
    greeting = f"Hi {name.group(1)}, " if name else ""
    found_words = ", ".join(value.replace("_", " ") for value in facts.values())
    said = f"I looked into it and found: {found_words}. " if found_words else ""
    if "initiate_refund" in done:
        said += "I have refunded the amount to your card. "
    return "respond_user", {"message": greeting + said + "Thanks for your patience: this is sorted now" + closing}


def in_process_day(seed: int) -> dict[str, Any]:
    """The scripted agent's day on a local TextSession: the reference a served day must equal."""
    session = TextSession(SCENARIO, roles=("resolver",), colleagues="heuristic")
    turn = session.reset(seed=seed)
    texts, rewards = [], []
    while turn is not None:
        texts.append(turn.text)
        step = session.step(*scripted_call(turn.text, turn.tools))
        rewards.append(step.reward)
        turn = step.turn
    return {"texts": texts, "rewards": rewards, "kpis": json_safe(session.result.kpis)}  # NaN travels as null


async def served_day(client: ContactCenterClient, seed: int) -> dict[str, Any]:
    result = await client.reset(seed=seed, scenario=SCENARIO, roles=["resolver"])
    texts, rewards, events = [], [], []
    while not result.done:
        turn = result.observation
        assert turn.error is None, turn.error
        texts.append(turn.text)
        name, arguments = scripted_call(turn.text, turn.tools)
        result = await client.step(ToolCallAction(tool=name, arguments=arguments))
        rewards.append(result.reward)
        events += result.observation.metadata.get("info", {}).get("events", [])
    state = await client.state()
    return {"texts": texts, "rewards": rewards, "kpis": result.observation.metadata["kpis"],
            "team_return": result.observation.metadata["team_return"], "state": state, "events": events}


# --- the server --------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


# Importing the server stack takes seconds on an idle machine and can take tens on a loaded one (26 s
# seen on two busy cores), so the wait is generous; CSR_MARL_SERVER_WAIT (seconds) changes it.
READY_SECONDS = float(os.environ.get("CSR_MARL_SERVER_WAIT", "180"))


def wait_until_ready(health_url: str, process: subprocess.Popen, log: Path) -> None:
    """Poll ``GET /health`` until it answers; fail saying what was awaited, for how long, and why."""
    started = time.monotonic()
    last_error = "no answer yet"
    while True:
        try:
            get_json(health_url)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            last_error = f"{type(error).__name__}: {getattr(error, 'reason', error)}"
        waited = time.monotonic() - started
        assert process.poll() is None, f"the server exited (code {process.returncode}) before GET {health_url} answered; its log: {log.read_text()}"
        assert waited < READY_SECONDS, (
            f"waited {waited:.0f} s for GET {health_url} to answer (CSR_MARL_SERVER_WAIT={READY_SECONDS:g}); "
            f"last error {last_error}; the server's log: {log.read_text()}"
        )
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    command = [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--scenario", SCENARIO,
               "--roles", "resolver", "--colleagues", "heuristic", "--max-sessions", "3", "--log-level", "warning"]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/health", process, log)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text(), log.read_text()


# --- tests -------------------------------------------------------------------------------------
def test_a_scripted_agent_resolves_tickets_over_the_websocket(server: str) -> None:
    async def play() -> tuple[dict[str, Any], dict[str, Any]]:
        async with ContactCenterClient(base_url=server) as client:
            return await served_day(client, seed=0), await served_day(client, seed=0)

    day, replay = asyncio.run(play())
    assert replay["texts"] == day["texts"] and replay["rewards"] == day["rewards"]  # same seed, same day
    kpis = day["kpis"]
    assert kpis["offered"] > 0 and kpis["resolved"] >= kpis["offered"] / 3, kpis
    assert sum(day["rewards"]) == pytest.approx(day["team_return"], abs=1e-6)
    state = day["state"]
    assert state.done and state.scenario == "resolve" and state.seed == 0
    assert state.step_count == len(day["rewards"]) and 0 < state.sim_minute <= state.horizon_minutes
    replies = [e for e in day["events"] if e["kind"] == "customer_reply"]
    grades = [e for e in day["events"] if e["kind"] == "reply_grade"]
    assert replies and all(e["reply"] and e["question"] for e in replies)  # customers answered
    assert any(e["reply"] in text for e in replies for text in day["texts"])  # and their words are read
    assert grades and all(0.0 <= e["score"] <= 0.5 and e["parts"] for e in grades)
    assert max(e["score"] for e in grades if e["resolved"]) >= 0.3  # a good reply to a resolved ticket
    reference = in_process_day(seed=0)
    assert day["texts"] == reference["texts"] and day["rewards"] == pytest.approx(reference["rewards"])
    assert day["kpis"] == reference["kpis"]


def test_concurrent_sessions_are_independent_and_reproducible(server: str) -> None:
    async def both() -> list[dict[str, Any]]:
        async with ContactCenterClient(base_url=server) as one, ContactCenterClient(base_url=server) as two:
            return list(await asyncio.gather(served_day(one, seed=1), served_day(two, seed=2)))

    first, second = asyncio.run(both())
    assert first["texts"] != second["texts"]
    for day, seed in ((first, 1), (second, 2)):
        reference = in_process_day(seed)
        assert day["texts"] == reference["texts"], f"seed {seed}: the served day differs from the local one"
        assert day["rewards"] == pytest.approx(reference["rewards"]) and day["kpis"] == reference["kpis"]


def test_sessions_beyond_max_sessions_are_refused_until_one_closes(server: str) -> None:
    async def crowd() -> None:
        clients = [ContactCenterClient(base_url=server) for _ in range(4)]
        try:
            for client in clients[:3]:  # the server was started with --max-sessions 3
                await client.reset(seed=5)
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                await clients[3].reset(seed=5)
            await clients[0].close()
            clients[0] = ContactCenterClient(base_url=server)
            for _ in range(50):  # the server frees the slot once the close handshake is done
                try:
                    result = await clients[0].reset(seed=5)
                    break
                except RuntimeError:
                    await asyncio.sleep(0.05)
            assert result.observation.tools
        finally:
            for client in clients:
                await client.close()

    asyncio.run(crowd())


def test_a_malformed_call_comes_back_as_an_error_not_a_server_error(server: str) -> None:
    with GenericEnvClient(base_url=server).sync() as env:
        first = env.reset(seed=3)
        agent = first.observation["agent"]
        refused = env.step({"tool": "launch_rocket", "arguments": {}})
        assert "launch_rocket" in refused.observation["error"] and refused.reward < 0 and not refused.done
        assert refused.observation["agent"] == agent and refused.observation["tools"]
        garbled = env.step({"tool": "respond_user", "arguments": "{not json"})
        assert "not valid JSON" in garbled.observation["error"]
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):  # no `tool`: the framework refuses the frame
            env.step({"arguments": {}})
        name, arguments = scripted_call(refused.observation["text"], refused.observation["tools"])
        accepted = env.step({"tool": name, "arguments": json.dumps(arguments)})  # a chat model's JSON string
        assert accepted.observation["error"] is None
        assert env.state()["step_count"] == 3


def test_reset_options_are_checked(server: str) -> None:
    with GenericEnvClient(base_url=server).sync() as env:
        with pytest.raises(RuntimeError, match="unknown scenario 'atlantis'"):
            env.reset(scenario="atlantis")
        with pytest.raises(RuntimeError, match="unknown role"):
            env.reset(roles=["janitor"])
        env.reset(seed=4, roles="resolver", colleagues={"triage": "random"})
        state = env.state()
        assert state["seed"] == 4 and state["roles"] == ["resolver"] and state["colleagues"]["triage"] == "random"
    request = urllib.request.Request(f"{server}/reset", data=b'{"scenario": "atlantis"}', method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 422 and "atlantis" in refused.value.read().decode()


def test_health_metadata_and_schema_answer(server: str) -> None:
    assert get_json(f"{server}/health")["status"] == "healthy"
    metadata = get_json(f"{server}/metadata")
    assert metadata["name"] == "csr_marl" and "tool" in metadata["description"]
    schema = get_json(f"{server}/schema")
    assert {"tool", "arguments"} <= set(schema["action"]["properties"])
    assert {"text", "tools", "agent", "role", "phase", "error", "reward", "done"} <= set(schema["observation"]["properties"])
    assert {"episode_id", "step_count", "scenario", "seed", "sim_minute"} <= set(schema["state"]["properties"])


def _openenv_cli() -> str:
    """The framework's ``openenv`` command: beside this interpreter (a venv), else on the PATH (a venv
    that reuses the system's packages)."""
    beside = Path(sys.executable).with_name("openenv")
    found = str(beside) if beside.exists() else shutil.which("openenv")
    if found is None:
        pytest.skip("the openenv command is not installed: it comes with the serve extra (pip install -e '.[serve]')")
    return found


@pytest.mark.slow
def test_openenv_validate_passes_against_the_running_server(server: str) -> None:
    openenv = _openenv_cli()
    done = subprocess.run([openenv, "validate", "--url", server], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Verdict: PASS" in done.stdout and "FAIL" not in done.stdout


@pytest.mark.slow
def test_the_manifest_passes_openenv_static_validation() -> None:
    openenv = _openenv_cli()
    done = subprocess.run([openenv, "validate", str(ROOT), "--level", "static", "--skip-build"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  static.manifest" in done.stdout


# --- the command's errors ---------------------------------------------------------------------
runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--roles", "janitor"], "unknown role(s) janitor"),
        (["--colleagues", "triage"], "unknown policy 'triage'"),
        (["--port", "70000"], "--port 70000"),
        (["--max-sessions", "0"], "--max-sessions 0"),
        (["--scenario", "atlantis"], "atlantis"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_a_port_in_use_is_refused_before_serving() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output, result.output


def test_without_the_extra_the_command_names_it() -> None:
    code = (
        "import sys; sys.modules['openenv'] = None; import csr_marl\n"
        "from csr_marl.cli import app\n"
        "app(['serve'], prog_name='csr-marl')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and 'pip install -e ".[serve]"' in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    light = subprocess.run([sys.executable, "-c", "import sys, csr_marl; print('openenv' in sys.modules)"],
                           capture_output=True, text=True, timeout=60)
    assert light.stdout.strip() == "False"
