"""One client cannot take the floor: sessions per client (WebSockets count), idle sessions reclaimed
when the server is full, an idle limit that keep-alives do not extend, fair turns between clients,
IPv6 counted by /64, a per-token rate on by default, close 1013 with the wait over the rate, text
that is not Unicode refused with one error frame, every refusal one short line, forwarded addresses
believed only from trusted proxies (a real stand-in proxy process), and ``ScenarioError`` for any
bad scenario name. Real servers on 127.0.0.1, real clients (websockets, httpx).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from extras import need

need("openenv")

import httpx  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidHandshake  # noqa: E402
from websockets.sync.client import ClientConnection, connect  # noqa: E402

from csr_marl.config.loading import ScenarioError, load_scenario  # noqa: E402
from csr_marl.serve.clients import TrustedProxies, client_key  # noqa: E402
from csr_marl.serve.sessions import FairGate  # noqa: E402

from serve_helpers import Served, running_proxy, running_server  # noqa: E402

TOKEN = "a-test-token-of-enough-length"
# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = [pytest.mark.filterwarnings("ignore:connect\\(\\) must be used:DeprecationWarning"), pytest.mark.xdist_group("serve_budgets")]
MESSAGE_CHARS = 500  # deploy.md: every error a client is sent is one line of at most 500 characters


def forwarded(address: str) -> dict[str, str]:
    """Headers of a client at ``address`` behind the proxy on 127.0.0.1 (trusted by default)."""
    return {"X-Forwarded-For": address}


def open_ws(served: Served | str, headers: dict[str, str] | None = None, **socket_options: Any) -> ClientConnection:
    url = served if isinstance(served, str) else served.ws_url
    return connect(url, additional_headers=headers, open_timeout=30, max_size=None, **socket_options)


def ask(ws: ClientConnection, message: dict[str, Any] | str, timeout: float = 60) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=timeout))


def first_frame(ws: ClientConnection, timeout: float = 0.5) -> dict[str, Any] | None:
    """The frame the server sent unasked (a refusal), or None if it sent none within ``timeout``."""
    try:
        return json.loads(ws.recv(timeout=timeout))
    except TimeoutError:
        return None


def closed_with(ws: ClientConnection, within: float = 20) -> tuple[list[dict[str, Any]], int | None]:
    """Every frame until the server closes ``ws`` (bounded), and the close code."""
    frames, deadline = [], time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            frames.append(json.loads(ws.recv(timeout=deadline - time.monotonic())))
    except ConnectionClosed as closed:
        return frames, closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        pass
    return frames, None


def server_fixture(name: str, args: list[str], token: str | None = None) -> Any:
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
        log = tmp_path_factory.mktemp(name) / "server.log"
        with running_server(log, ["--scenario", "tasks/resolve", *args], token=token) as served:
            yield served
        text = log.read_text()
        assert "Traceback" not in text and "Exception in ASGI application" not in text, text

    return fixture


hoard_server = server_fixture("hoard", ["--max-sessions", "12"])
reclaim_server = server_fixture("reclaim", ["--max-sessions", "4", "--max-sessions-per-client", "2",
                                            "--reclaim-idle-seconds", "1"])
idle_server = server_fixture("idle", ["--idle-seconds", "3"])
rate_server = server_fixture("rate", ["--rate-per-second", "0.2", "--rate-burst", "2"])
token_server = server_fixture("token", ["--auth-token", TOKEN, "--rate-per-second", "1", "--rate-burst", "2"], token=TOKEN)
text_server = server_fixture("text", [])
newcomer_server = server_fixture("newcomers", ["--rate-per-second", "0.1", "--rate-burst", "2", "--max-sessions", "1"])


# --- sessions per client ------------------------------------------------------------------------
def test_one_address_cannot_hold_every_session(hoard_server: Served) -> None:
    """64 silent WebSockets from one address held every session; now it holds its share (8) and the
    others are refused with CAPACITY_REACHED, while another client gets a session and HTTP /reset works."""
    hoarder = forwarded("198.51.100.7")
    held, refused = [], 0
    try:
        for _ in range(12):
            ws = open_ws(hoard_server, hoarder)
            frame = first_frame(ws)
            if frame is not None:
                assert frame["data"]["code"] == "CAPACITY_REACHED" and "already holds 8 sessions" in frame["data"]["message"]
                refused += 1
                ws.close()
            else:
                held.append(ws)
        assert (len(held), refused) == (8, 4)
        with open_ws(hoard_server, forwarded("198.51.100.8")) as other:
            reply = ask(other, {"type": "reset", "data": {"seed": 1}})
            assert reply["type"] == "observation", reply
        response = httpx.post(f"{hoard_server.url}/reset", json={"seed": 2}, headers=forwarded("198.51.100.9"), timeout=60)
        assert response.status_code == 200, response.text
    finally:
        for ws in held:
            ws.close()


def test_idle_sessions_make_room_when_the_server_is_full(reclaim_server: Served) -> None:
    """Two addresses fill the server with silent sessions; a third client gets in, and the session
    longest without work is closed with one error frame saying why."""
    held = [open_ws(reclaim_server, forwarded(f"198.51.100.{10 + i // 2}")) for i in range(4)]
    try:
        time.sleep(1.5)  # past --reclaim-idle-seconds
        with open_ws(reclaim_server, forwarded("198.51.100.20")) as newcomer:
            reply = ask(newcomer, {"type": "reset", "data": {"seed": 3}})
            assert reply["type"] == "observation", reply
        frames, code = closed_with(held[0])  # the oldest: it has gone longest without a reset or step
        assert code is not None and [f["data"]["code"] for f in frames] == ["SESSION_ERROR"]
        assert "closed to make room" in frames[0]["data"]["message"]
    finally:
        for ws in held:
            ws.close()


@pytest.mark.slow
def test_a_keep_alive_does_not_extend_the_idle_limit(idle_server: Served) -> None:
    """A `state` message every half second kept a session forever; the idle limit counts from the last
    reset or step, so the session closes at --idle-seconds whatever else it sends."""
    with open_ws(idle_server, forwarded("198.51.100.30")) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        deadline, closing = time.monotonic() + 20, None
        while time.monotonic() < deadline and closing is None:
            try:
                reply = ask(ws, {"type": "state"}, timeout=5)
            except ConnectionClosed:
                break
            if reply["type"] == "error":
                closing = reply
            time.sleep(0.5)
        assert closing is not None and "no reset or step for 3 s" in closing["data"]["message"]


ws_cap_server = server_fixture("wscap", ["--trusted-proxies", "", "--rate-loopback", "--max-connections-per-client", "3",
                                          "--max-sessions-per-client", "16"])


@pytest.mark.slow
def test_websockets_count_toward_the_connection_cap(ws_cap_server: Served) -> None:
    """WebSockets did not count toward --max-connections-per-client: an address held any number of
    sockets that way. Now its fourth connection is refused while three WebSockets are open."""
    held = [open_ws(ws_cap_server, source_address=("127.0.0.2", 0)) for _ in range(3)]
    try:
        with pytest.raises((ConnectionClosed, InvalidHandshake, OSError, TimeoutError)):
            with open_ws(ws_cap_server.ws_url, source_address=("127.0.0.2", 0)) as fourth:
                fourth.recv(timeout=5)
        with open_ws(ws_cap_server, source_address=("127.0.0.3", 0)) as other:  # another address: its own cap
            assert ask(other, {"type": "state"})["type"] == "state"
    finally:
        for ws in held:
            ws.close()


# --- rates: close 1013, IPv6 by /64, the token's own rate ---------------------------------------
def test_a_websocket_over_the_rate_is_closed_1013_with_the_wait(rate_server: Served) -> None:
    """A handshake over the rate got HTTP 403 (the wrong-token answer); now it is accepted, told the
    wait in one error frame, and closed with 1013 (try again later) and the wait in the reason."""
    client = forwarded("198.51.100.40")
    for _ in range(2):  # the burst
        with open_ws(rate_server, client):
            pass
    with open_ws(rate_server, client) as ws:
        frames, code = closed_with(ws)
        reason = ws.close_reason
    assert code == 1013 and "retry after" in (reason or "")
    assert frames[0]["data"]["code"] == "RATE_LIMITED" and frames[0]["data"]["retry_after_seconds"] >= 1


def test_ipv6_clients_share_a_bucket_per_64(rate_server: Served) -> None:
    """Every address of one /64 is one client: a fresh address from the same /64 does not get a fresh burst."""
    statuses = [httpx.get(f"{rate_server.url}/health", headers=forwarded(f"2001:db8:1:2::{i}"), timeout=30).status_code
                for i in range(1, 6)]
    assert statuses[:2] == [200, 200] and statuses[2:] == [429, 429, 429]
    other = httpx.get(f"{rate_server.url}/health", headers=forwarded("2001:db8:1:3::1"), timeout=30)
    assert other.status_code == 200  # another /64, another client


def test_a_token_has_its_own_rate_by_default(token_server: Served) -> None:
    """With a bearer token and no --token-rate-per-second, the token is limited (8 clients' rate):
    one token spread over many addresses cannot send more than that."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=30) as client:  # each request from a fresh address: none reaches its own burst
        statuses = [client.get(f"{token_server.url}/health", headers={**headers, **forwarded(f"198.51.100.{i}")}).status_code
                    for i in range(1, 41)]
    assert statuses[:2] == [200, 200] and statuses.count(429) >= 20


@pytest.mark.slow
def test_many_fresh_addresses_share_one_clients_rate(newcomer_server: Served) -> None:
    """Each address had its own full burst, so one call from each of many addresses was never limited.
    Now addresses not seen lately share one client's bucket: past its burst, a newcomer waits its turn
    (at most 5 s) or, as here where the wait would be 10 s, gets 429. A client already seen keeps its own."""
    with httpx.Client(timeout=30) as client:
        statuses = [client.get(f"{newcomer_server.url}/health", headers=forwarded(f"198.18.7.{i}")).status_code
                    for i in range(1, 7)]
        assert statuses == [200, 200, 429, 429, 429, 429]
        assert client.get(f"{newcomer_server.url}/health", headers=forwarded("198.18.7.1")).status_code == 200


def test_a_stateless_step_needs_no_place(newcomer_server: Served) -> None:
    """A stateless ``POST /step`` has no day running (its environment is thrown away), so its answer is
    given at once: it took a place, a turn and a thread, and got 503 from a full server. The one place
    here is held by a WebSocket session (from this machine: no rate applies)."""
    with open_ws(newcomer_server) as ws:
        assert ask(ws, {"type": "state"})["type"] == "state"
        step = {"action": {"tool": "respond_user", "arguments": {"message": "hello"}}}
        answer = httpx.post(f"{newcomer_server.url}/step", json=step, timeout=30)
        reset = httpx.post(f"{newcomer_server.url}/reset", json={"seed": 0}, timeout=30)
    assert answer.status_code == 200 and "no day is running" in answer.json()["observation"]["error"], answer.text
    assert reset.status_code == 503  # a reset builds a day: it needs a place


# --- text the server cannot choke on, and short refusals ----------------------------------------
def working_turn(ws: ClientConnection) -> dict[str, Any]:
    """Reset, and pick a ticket if asked: a turn where respond_user is legal."""
    reply = ask(ws, {"type": "reset", "data": {"seed": 0}})
    while "respond_user" not in reply["data"]["observation"]["legal_tools"]:
        tools = {tool["function"]["name"]: tool["function"] for tool in reply["data"]["observation"]["tools"]}
        assert "pick_ticket" in tools, tools
        ticket = tools["pick_ticket"]["parameters"]["properties"]["ticket_id"]["enum"][0]
        reply = ask(ws, {"type": "step", "data": {"tool": "pick_ticket", "arguments": {"ticket_id": ticket}}})
    return reply


@pytest.mark.parametrize("arguments", [
    '{"message": "\\ud800"}',  # a lone surrogate in the arguments object
    '{"message": "cut emoji \\ud83d"}',  # half of an emoji's escape pair
    '"{\\"message\\": \\"\\\\ud800\\"}"',  # arguments as the JSON string a chat model emits
], ids=["object", "cut-emoji", "json-string"])
def test_a_lone_surrogate_is_one_error_frame_and_the_session_goes_on(text_server: Served, arguments: str) -> None:
    """respond_user("\\ud800") closed the WebSocket with 1000, no error frame, a traceback in the log."""
    with open_ws(text_server, forwarded("198.51.100.50")) as ws:
        working_turn(ws)
        reply = ask(ws, '{"type": "step", "data": {"tool": "respond_user", "arguments": %s}}' % arguments)
        assert reply["type"] == "error" and "not Unicode" in reply["data"]["message"], reply
        assert len(reply["data"]["message"]) <= MESSAGE_CHARS
        after = ask(ws, {"type": "step", "data": {"tool": "respond_user", "arguments": {"message": "Sorry 😀, on it."}}})
        assert after["type"] == "observation", after


def test_a_lone_surrogate_over_http_is_a_422(text_server: Served) -> None:
    body = '{"seed": 0, "scenario": "tasks/resolve\\udc00"}'.encode()
    response = httpx.post(f"{text_server.url}/reset", content=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 422 and "not Unicode" in response.json()["detail"]


def test_a_refused_tool_call_is_one_short_line_in_error_and_text(text_server: Served) -> None:
    """60,000 unknown argument names came back as a 468,945-character error, repeated in the prompt;
    15,000 (the most a frame under the 256 KiB limit holds) now come back as one short line."""
    with open_ws(text_server, forwarded("198.51.100.51")) as ws:
        working_turn(ws)
        usual = ask(ws, {"type": "step", "data": {"tool": "respond_user", "arguments": {"mesage": "hi"}}})
        names = {f"k{i}": 0 for i in range(15_000)}
        huge = ask(ws, {"type": "step", "data": {"tool": "respond_user", "arguments": names}})
    error = huge["data"]["observation"]["error"]
    assert "unexpected argument" in error and len(error) <= MESSAGE_CHARS and "\n" not in error
    assert len(huge["data"]["observation"]["text"]) <= len(usual["data"]["observation"]["text"]) + MESSAGE_CHARS


def test_tool_call_validation_names_a_few_unknown_arguments() -> None:
    from csr_marl.text import TextSession

    session = TextSession("tasks/resolve", 0, roles=("resolver",))
    turn = session.reset(seed=0)
    result = session.step(turn.tool_names[0], {f"extra{i}": 1 for i in range(5_000)})
    assert result.error is not None and "and 4,997 more" in result.error and len(result.error) <= MESSAGE_CHARS


# --- fair turns, client keys, trusted proxies ----------------------------------------------------
def test_the_gate_serves_the_least_busy_client_first() -> None:
    """With the server busy, a waiting call of a client that used little goes ahead of a heavy user's."""

    async def scenario() -> list[str]:
        gate = FairGate(slots=1, hand_off=60.0)
        order: list[str] = []
        release = asyncio.Event()

        def call(name: str, hold: bool = False) -> Any:
            async def body() -> None:
                order.append(name)
                if hold:
                    await release.wait()
            return lambda: asyncio.ensure_future(body())

        gate._charge("heavy", 5.0)  # the heavy user's recent busy seconds
        running = asyncio.ensure_future(gate.run("first", call("first", hold=True)))
        await asyncio.sleep(0)
        heavy = [asyncio.ensure_future(gate.run("heavy", call(f"heavy{i}"))) for i in range(3)]
        await asyncio.sleep(0)
        light = asyncio.ensure_future(gate.run("light", call("light")))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(running, light, *heavy)
        return order

    assert asyncio.run(scenario()) == ["first", "light", "heavy0", "heavy1", "heavy2"]


def test_client_keys_and_trusted_proxies() -> None:
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:203.0.113.7") == client_key("203.0.113.7") == "203.0.113.7"
    proxies = TrustedProxies("127.0.0.7, 10.0.0.0/8")
    assert proxies.trusts("127.0.0.7") and proxies.trusts("10.9.8.7")
    assert not proxies.trusts("127.0.0.1") and not TrustedProxies("").trusts("127.0.0.1")
    with pytest.raises(ValueError, match="trusted-proxies"):
        TrustedProxies("not-an-address")


PROXY = "127.0.0.7"  # the stand-in proxy connects to the server from here


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    tmp = tmp_path_factory.mktemp("proxy")
    args = ["--scenario", "tasks/resolve", "--trusted-proxies", PROXY, "--rate-loopback", "--rate-per-second", "0.2",
            "--rate-burst", "3", "--max-sessions-per-client", "2", "--max-connections-per-client", "0"]
    with running_server(tmp / "server.log", args) as served:
        port = int(served.url.rsplit(":", 1)[1])
        with running_proxy(port, PROXY, tmp) as proxy_url:
            yield served, proxy_url


def local_client(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


@pytest.mark.slow
def test_forwarded_addresses_count_only_from_a_trusted_proxy(behind_proxy: tuple[Served, str]) -> None:
    """Through the proxy (trusted) each client has its own bucket; a client reaching the server
    directly cannot buy fresh buckets with a forged X-Forwarded-For."""
    served, proxy_url = behind_proxy
    with local_client("127.0.0.2") as first, local_client("127.0.0.3") as second, local_client("127.0.0.5") as direct:
        assert [first.get(f"{proxy_url}/health").status_code for _ in range(4)] == [200, 200, 200, 429]
        assert second.get(f"{proxy_url}/health").status_code == 200  # its own bucket, behind the same proxy
        forged = [direct.get(f"{served.url}/health", headers=forwarded(f"203.0.113.{i}")).status_code for i in range(1, 5)]
        assert forged == [200, 200, 200, 429]  # one bucket: its socket's address, whatever it claims


@pytest.mark.slow
def test_sessions_per_client_behind_a_trusted_proxy(behind_proxy: tuple[Served, str]) -> None:
    """The session cap counts each forwarded client: one behind the proxy cannot take the others' places."""
    _, proxy_url = behind_proxy
    ws_url = proxy_url.replace("http://", "ws://") + "/ws"
    held = []
    try:
        for _ in range(2):
            held.append(open_ws(ws_url, source_address=("127.0.0.8", 0)))
            assert first_frame(held[-1]) is None
        with open_ws(ws_url, source_address=("127.0.0.8", 0)) as third:
            refusal = first_frame(third, timeout=5)
        assert refusal is not None and refusal["data"]["code"] == "CAPACITY_REACHED"
        with open_ws(ws_url, source_address=("127.0.0.9", 0)) as other:
            assert first_frame(other) is None
    finally:
        for ws in held:
            ws.close()


# --- scenario names -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["a" * 5_000, "b" * 300, "../" * 400 + "x", "c/" * 300 + "d.yaml", "e\x00f"],
                         ids=["5000-chars", "part-too-long", "deep-dots", "long-yaml-path", "nul"])
def test_every_bad_scenario_name_is_a_scenario_error(name: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(name)
    assert len(str(caught.value)) <= MESSAGE_CHARS + 2_000 and "\n" not in str(caught.value)


def test_bad_names_never_reach_the_file_system_from_a_client(text_server: Served) -> None:
    response = httpx.post(f"{text_server.url}/reset", json={"scenario": "a" * 5_000}, timeout=30)
    assert response.status_code == 422 and len(response.json()["detail"]) <= MESSAGE_CHARS
