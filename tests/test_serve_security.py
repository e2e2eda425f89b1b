"""``csr-marl serve`` faces other people's code: no file of the server reaches a client, every request
runs under a work budget, a client that leaves frees its slot, SIGTERM stops the server, and a bearer
token guards every route. Real servers on 127.0.0.1, real clients (the OpenEnv client, websockets,
plain HTTP); each reproduction of the security review is a test here.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import need

need("openenv")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from csr_marl.serve.client import ContactCenterClient, ToolCallAction  # noqa: E402

from serve_helpers import ROOT, Served, free_port, request, running_server  # noqa: E402

TOKEN = "a-test-token-of-enough-length"
RUNAWAY = {  # no resolver turn ever comes: before the budget, this reset simulated ~1.7 M tickets
    "roles": ["resolver"],
    "overrides": {"staffing.resolver": 0, "arrivals": {"rate_per_hour": 10000}, "horizon_minutes": 10000},
}
SECRET_LINE = "csr-marl-secret-line: 1234"


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("serve_security")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("secure") / "server.log"
    with running_server(log, ["--scenario", "standard_day", "--max-sessions", "4"]) as served:
        yield served
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def resolve_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("resolve") / "server.log"
    with running_server(log, ["--scenario", "tasks/resolve"]) as served:
        yield served
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("token") / "server.log"
    with running_server(log, ["--scenario", "tasks/resolve", "--auth-token", TOKEN], token=TOKEN) as served:
        yield served


def ws_call(served: Served, *messages: dict[str, Any] | str | bytes, headers: dict[str, str] | None = None,
            timeout: float = 60) -> list[dict[str, Any]]:
    """Send each message on one WebSocket session and read one reply to each."""
    replies = []
    with connect(served.ws_url, additional_headers=headers, open_timeout=30, max_size=None) as socket:
        for message in messages:
            socket.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
            replies.append(json.loads(socket.recv(timeout=timeout)))
    return replies


def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.yaml"
    path.write_text(f"{SECRET_LINE}\nanother: line\n")
    return path


# --- 1. nothing on the server's disk reaches a client ----------------------------------------------
@pytest.mark.parametrize("overrides", [
    {"tickets.bank": "{secret}"},
    {"tickets": {"bank": "{secret}"}},
    {"arrivals": {"trace": "{secret}"}},
    {"arrivals.trace": "{secret}", "arrivals.rate_per_hour": None},
    {"tickets.bank": "../../{secret}"},
    {"tickets.bank": {"file": "{secret}"}},
    {"tickets": {"bank": {"file": "{secret}"}}},
], ids=["bank", "nested-bank", "trace", "dotted-trace", "relative-bank", "bank-mapping", "nested-bank-mapping"])
def test_no_override_reads_a_file_over_websocket_or_http(server: Served, tmp_path: Path, overrides: dict[str, Any]) -> None:
    secret = secret_file(tmp_path)
    chosen = json.loads(json.dumps(overrides).replace("{secret}", str(secret)))
    missing = json.loads(json.dumps(overrides).replace("{secret}", str(tmp_path / "no-such-file.yaml")))
    (reply,) = ws_call(server, {"type": "reset", "data": {"overrides": chosen}})
    status, body = request(f"{server.url}/reset", {"overrides": chosen})
    _, body_missing = request(f"{server.url}/reset", {"overrides": missing})
    assert reply["type"] == "error" and status == 422
    for text in (json.dumps(reply), json.dumps(body)):
        assert SECRET_LINE not in text and "another" not in text
        assert "not open to clients" in text or "names a bank the server ships" in text
    # An existing path and a missing one get the same answer: no error tells which paths exist.
    assert body["detail"].replace(str(secret), "P") == body_missing["detail"].replace(str(tmp_path / "no-such-file.yaml"), "P")


def test_the_etc_passwd_reproduction(server: Served) -> None:
    (reply,) = ws_call(server, {"type": "reset", "data": {"overrides": {"tickets.bank": "/etc/passwd"}}})
    status, body = request(f"{server.url}/reset", {"overrides": {"arrivals": {"trace": "/proc/self/status"}}})
    assert reply["type"] == "error" and "root:" not in json.dumps(reply)
    assert status == 422 and "VmRSS" not in json.dumps(body) and "Name:" not in json.dumps(body)


def test_a_shipped_bank_by_name_and_allowed_overrides_work(server: Served) -> None:
    overrides = {"tickets.bank": "default", "staffing.resolver": 2, "arrivals": {"rate_per_hour": 30}, "horizon_minutes": 60}
    (reply,) = ws_call(server, {"type": "reset", "data": {"seed": 1, "overrides": overrides}})
    assert reply["type"] == "observation" and reply["data"]["observation"]["tools"], reply


# --- 2. bounded work per client ---------------------------------------------------------------------
@pytest.mark.slow
def test_a_runaway_reset_is_stopped_by_the_work_budget(server: Served) -> None:
    (reply,) = ws_call(server, {"type": "reset", "data": RUNAWAY}, timeout=120)
    assert reply["type"] == "error" and "work budget" in reply["data"]["message"], reply
    status, body = request(f"{server.url}/reset", RUNAWAY, timeout=120)
    assert status == 422 and "work budget" in body["detail"], body
    # The session goes on: the next reset plays a normal day.
    replies = ws_call(server, {"type": "reset", "data": RUNAWAY}, {"type": "reset", "data": {"seed": 2}}, timeout=120)
    assert replies[1]["type"] == "observation"


def test_http_reset_obeys_the_session_cap(tmp_path: Path) -> None:
    with running_server(tmp_path / "log", ["--scenario", "tasks/resolve", "--max-sessions", "1"]) as served:
        with connect(served.ws_url, open_timeout=30) as holder:  # holds the only slot
            holder.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(holder.recv(timeout=60))["type"] == "observation"
            status, body = request(f"{served.url}/reset", {"seed": 0})
            assert status == 503 and "capacity" in body["detail"]
        for _ in range(100):  # the slot frees when the socket closes
            status, _ = request(f"{served.url}/reset", {"seed": 0})
            if status == 200:
                break
            time.sleep(0.05)
        assert status == 200


def test_a_client_that_leaves_mid_reset_frees_its_slot_at_once(tmp_path: Path) -> None:
    args = ["--scenario", "standard_day", "--max-sessions", "1", "--max-tickets-per-call", "5000000",
            "--max-seconds-per-call", "300"]
    with running_server(tmp_path / "log", args) as served:
        with connect(served.ws_url, open_timeout=30) as runaway:
            runaway.send(json.dumps({"type": "reset", "data": RUNAWAY}))
            time.sleep(1.0)  # the reset is running when the client goes
        started = time.monotonic()
        while True:  # before the fix the slot stayed taken for the whole reset (minutes)
            try:
                (reply,) = ws_call(served, {"type": "reset", "data": {"seed": 0}})
                if reply["type"] == "observation":
                    break
            except (ConnectionClosed, OSError):
                pass
            assert time.monotonic() - started < 60, "the slot was not freed"
            time.sleep(0.1)


@pytest.mark.slow
def test_sigterm_stops_a_server_busy_with_a_runaway_reset(tmp_path: Path) -> None:
    args = ["--scenario", "standard_day", "--max-tickets-per-call", "5000000", "--max-seconds-per-call", "300"]
    with running_server(tmp_path / "log", args) as served:
        with connect(served.ws_url, open_timeout=30) as socket:
            socket.send(json.dumps({"type": "reset", "data": RUNAWAY}))
            time.sleep(1.0)  # the reset is running
            served.process.send_signal(signal.SIGTERM)
            served.process.wait(timeout=5)  # raises if it is still running after 5 s


@pytest.mark.parametrize(("frame", "why"), [
    ("{not json", "not valid JSON"),
    ("[" * 100_000, "nested deeper"),
    (json.dumps({"type": "reset", "data": {"seed": [[[[[[[[[[[[[[1]]]]]]]]]]]]]]}}), "nested deeper"),
    (b"\x00\x01binary", "binary frames"),
    ("[1, 2]", "a message is a JSON object"),
    (json.dumps({"type": "launch"}), "unknown message type"),
    (json.dumps({"type": "step", "data": {"tool": ["respond_user"]}}), "step: tool"),
    (json.dumps({"type": "reset", "data": {"overrides": {"staffing.resolver": 10**12}}}), "staffing.resolver"),
], ids=["garbled", "deep", "deep-seed", "binary", "array", "type", "tool-list", "headcount"])
def test_malformed_frames_get_an_error_and_the_session_goes_on(server: Served, frame: str | bytes, why: str) -> None:
    error, after = ws_call(server, frame, {"type": "reset", "data": {"seed": 3}})
    assert error["type"] == "error" and why in error["data"]["message"], error
    assert len(error["data"]["message"]) <= 500 and after["type"] == "observation"


def test_an_oversized_frame_closes_only_that_connection(server: Served) -> None:
    with pytest.raises(ConnectionClosed):
        ws_call(server, json.dumps({"type": "step", "data": {"tool": "x" * (2 << 20)}}))
    (reply,) = ws_call(server, {"type": "reset", "data": {"seed": 4}})
    assert reply["type"] == "observation"
    status, _ = request(f"{server.url}/reset", b'{"seed": 1, "pad": "' + b"x" * (2 << 20) + b'"}')
    assert status == 413


# --- 3. a malformed tool call over the network is a refusal, not EXECUTION_ERROR ---------------------
@pytest.mark.parametrize("arguments", ["[" * 100_000, {"amount": 10**400}, '{"amount": ' + "1" * 5000 + "}"],
                         ids=["brackets", "huge-int", "long-digits"])
def test_a_malformed_tool_call_is_a_refusal_over_the_websocket(resolve_server: Served, arguments: Any) -> None:
    replies = ws_call(resolve_server, {"type": "reset", "data": {"seed": 1}},
                      {"type": "step", "data": {"tool": "initiate_refund", "arguments": arguments}})
    refused = replies[1]
    assert refused["type"] == "observation", refused
    observation = refused["data"]["observation"]
    assert observation["error"] and observation["tools"] and refused["data"]["reward"] < 0


# --- 1b. the bearer token ---------------------------------------------------------------------------
def test_the_bearer_token_guards_every_route_and_the_handshake(token_server: Served) -> None:
    served = token_server
    good = {"Authorization": f"Bearer {TOKEN}"}
    for route in ("/health", "/metadata", "/schema", "/state"):
        assert request(f"{served.url}{route}")[0] == 401
        assert request(f"{served.url}{route}", headers={"Authorization": "Bearer wrong-token-xxxxxxxx"})[0] == 401
        assert request(f"{served.url}{route}", headers=good)[0] == 200
    assert request(f"{served.url}/reset", {"seed": 0})[0] == 401
    assert request(f"{served.url}/reset", {"seed": 0}, headers=good)[0] == 200
    with pytest.raises(InvalidStatus):
        ws_call(served, {"type": "reset", "data": {}})

    async def play() -> Any:
        async with ContactCenterClient(base_url=served.url, headers=good) as client:
            await client.reset(seed=0)
            return await client.step(ToolCallAction(tool="no_such_tool", arguments={}))

    result = asyncio.run(play())
    assert result.observation.error and "is not a tool" in result.observation.error


# --- the Dockerfile ---------------------------------------------------------------------------------
def dockerfile_instruction(name: str) -> str:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith(name + " ")]
    return line[len(name) + 1:].strip()


def test_the_dockerfile_runs_as_a_numeric_user_with_an_exec_form_healthcheck(token_server: Served) -> None:
    user = dockerfile_instruction("USER")
    assert all(part.isdigit() and int(part) > 0 for part in user.split(":")), user
    probe = json.loads(dockerfile_instruction("HEALTHCHECK").split(" CMD ", 1)[1])  # exec form: a JSON array
    assert isinstance(probe, list) and probe[0] == "python"
    port = token_server.url.rsplit(":", 1)[1]
    env = {**os.environ, "PORT": port}
    assert subprocess.run(probe, env=env, capture_output=True, timeout=30).returncode != 0  # no token: 401
    env["CSR_MARL_AUTH_TOKEN"] = TOKEN
    healthy = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=30)
    assert healthy.returncode == 0, healthy.stderr


def test_the_port_comes_from_the_environment(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen([sys.executable, "-m", "csr_marl", "serve", "--scenario", "tasks/resolve", "--log-level", "warning"],
                               env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(f"http://127.0.0.1:{port}/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "no server on $PORT"
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=15)
