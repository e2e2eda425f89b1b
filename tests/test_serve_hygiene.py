"""Every unit of a request's work metered, connections kept clean, and a rate per client: a real
``csr-marl serve`` on 127.0.0.1, each attack bounded in count and time."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from extras import need

need("openenv")

from csr_marl.serve.connections import OncePerInterval  # noqa: E402
from csr_marl.serve.guard import ClientError, check_override_cost  # noqa: E402
from csr_marl.serve.ratelimit import TokenBuckets  # noqa: E402

from serve_helpers import Served, request, running_server  # noqa: E402

TOKEN = "a-test-token-of-enough-length"
SURGES = [{"start_minute": i * 0.1, "end_minute": i * 0.1 + 0.05, "multiplier": 1.5} for i in range(4_000)]
SHIFTS = [{"at_minute": i * 0.04, "resolver": 1 + i % 3} for i in range(10_000)]


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("serve_hygiene")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("hygiene") / "server.log"
    args = ["--scenario", "tasks/resolve", "--auth-token", TOKEN, "--request-read-seconds", "1",
            "--max-connections-per-client", "8", "--max-message-bytes", str(1 << 20)]  # bodies that are costed, not cut
    with running_server(log, args, token=TOKEN) as served:
        yield served
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def _auth(scheme: str = "Bearer") -> dict[str, str]:
    return {"Authorization": f"{scheme} {TOKEN}"}


# --- item 1: a reset's construction is costed before it runs --------------------------------------
@pytest.mark.parametrize("overrides", [{"arrivals.surges": SURGES}, {"staffing.shifts": SHIFTS}])
def test_a_reset_that_would_build_too_much_is_refused_before_building(server: Served, overrides: dict) -> None:
    status, body = request(f"{server.url}/reset", {"seed": 0, "overrides": overrides}, headers=_auth(), timeout=30)
    assert status == 422 and "max-override-entries" in body["detail"], body
    assert request(f"{server.url}/health", headers=_auth(), timeout=10)[0] == 200


def test_override_cost_counts_list_entries_at_every_depth() -> None:
    check_override_cost({"arrivals": {"surges": SURGES[:10]}, "staffing.shifts": SHIFTS[:10]}, 20)
    with pytest.raises(ClientError, match="21 list entries"):
        check_override_cost({"arrivals": {"surges": SURGES[:11]}, "staffing.shifts": SHIFTS[:10]}, 20)


# --- item 4's papercuts: the auth scheme in any case, error text capped -----------------------------
@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_the_bearer_scheme_is_case_insensitive(server: Served, scheme: str) -> None:
    assert request(f"{server.url}/health", headers=_auth(scheme))[0] == 200


def test_another_scheme_or_token_is_still_refused(server: Served) -> None:
    assert request(f"{server.url}/health", headers=_auth("Basic"))[0] == 401
    assert request(f"{server.url}/health", headers={"Authorization": f"bearer {TOKEN}x"})[0] == 401


def test_http_error_text_is_at_most_500_characters(server: Served) -> None:
    status, body = request(f"{server.url}/reset", {"seed": 0, "overrides": {"k" * 3_000: 1}}, headers=_auth())
    assert status == 422 and len(body["detail"]) <= 500, len(body["detail"])


# --- item 2: slowloris ---------------------------------------------------------------------------------
def test_half_sent_requests_are_closed_and_health_still_answers(server: Served) -> None:
    """40 sockets each send half a request line (bounded: 40 sockets, a few seconds)."""
    port = int(server.url.rsplit(":", 1)[1])
    sockets = []
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sockets.append(sock)
            try:
                sock.sendall(b"GET /health HTT")
            except (ConnectionResetError, BrokenPipeError):  # closed at once: over the address's cap
                pass
        time.sleep(0.5)  # the server has read the half requests: they are stalled, and give way
        assert request(f"{server.url}/health", headers=_auth(), timeout=10)[0] == 200
        deadline = time.monotonic() + 15
        for sock in sockets:  # each is closed by the server: over the cap at once, else after 1 s
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            assert _closed_by_server(sock)
    finally:
        for sock in sockets:
            sock.close()
    lines = [line for line in server.log.read_text().splitlines() if "closed" in line]
    assert len(lines) <= 4, lines  # one line per condition, not one per socket


def test_a_slowloris_from_another_address_is_shed_while_this_one_is_answered(server: Served) -> None:
    """40 half-sent sockets from 127.0.0.2, another client with its own cap of 8, as an attacker on
    another machine would be: every one is closed by the server (past the cap unread, after a hold),
    and 127.0.0.1 is answered meanwhile. Bounded: 40 sockets, loopback only, a few seconds."""
    _need_second_loopback()
    port = int(server.url.rsplit(":", 1)[1])
    sockets = []
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))
            sockets.append(sock)
            try:
                sock.sendall(b"GET /health HTT")
            except (ConnectionResetError, BrokenPipeError):
                pass
        started = time.monotonic()
        assert request(f"{server.url}/health", headers=_auth(), timeout=10)[0] == 200  # no wait for the attacker's sockets
        assert time.monotonic() - started < 2.0
        deadline = time.monotonic() + 15
        for sock in sockets:  # the cap's 8 after the 1 s read deadline, the rest after the hold
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            assert _closed_by_server(sock)
    finally:
        for sock in sockets:
            sock.close()
    assert request(f"{server.url}/health", headers=_auth(), timeout=10)[0] == 200


def test_an_address_at_its_cap_gives_way_once_per_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flood from one address churns one stalled connection per interval; the rest are refused at once."""
    from csr_marl.serve import connections

    clock = [100.0]
    monkeypatch.setattr(connections, "time", SimpleNamespace(monotonic=lambda: clock[0]))  # this module's clock only

    class Stalled:  # a connection that has sent half a request
        heard, opened, closed = True, 0.0, False

        def __init__(self) -> None:
            self.transport = self

        def is_closing(self) -> bool:
            return self.closed

        def reading_request(self) -> bool:
            return True

        def close(self, why: str) -> None:
            self.closed = True

    book = connections.ConnectionBook(2)
    first, second, third = Stalled(), Stalled(), Stalled()
    assert book.admit(first, "127.0.0.2") and book.admit(second, "127.0.0.2")
    assert book.admit(third, "127.0.0.2") and first.closed  # the oldest stalled one gave way
    assert not book.admit(Stalled(), "127.0.0.2")  # within the interval: refused, nothing closed
    assert not second.closed
    assert book.admit(Stalled(), "127.0.0.1")  # another address has its own cap
    clock[0] += connections.GIVE_WAY_SECONDS
    assert book.admit(Stalled(), "127.0.0.2") and second.closed


def test_connections_past_the_cap_never_reach_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 half-sent sockets from 127.0.0.2 against a cap of 4: the listening socket turns away those
    past the cap as it accepts them, so the server sets up (a transport, a protocol) only the 4 and
    the one stalled connection it gives up; the refused ones are held, not closed and reopened at
    once. The server runs in this process, so the protocols it makes can be counted."""
    import asyncio
    import threading

    from csr_marl.serve import connections
    from csr_marl.serve.app import create_server_app, guarded_server
    from csr_marl.serve.guard import ServerLimits

    _need_second_loopback()
    monkeypatch.setattr(connections, "GIVE_WAY_SECONDS", 3600.0)  # the address gives up one stalled connection, no more
    made: list[object] = []
    connection_made = connections.GuardedH11Protocol.connection_made

    def counted(protocol: connections.GuardedH11Protocol, transport: object) -> None:
        made.append(protocol)
        connection_made(protocol, transport)

    monkeypatch.setattr(connections.GuardedH11Protocol, "connection_made", counted)
    limits = ServerLimits(max_connections_per_client=4, request_read_seconds=60)
    server, listeners = guarded_server(create_server_app("tasks/resolve", limits=limits), "127.0.0.1", 0, "warning")
    port = listeners[0].getsockname()[1]
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=listeners),), daemon=True)
    thread.start()
    sockets = []
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))
            sock.sendall(b"GET /health HTT")
            sockets.append(sock)
        while len(made) + listeners[0].refused < 40:  # every socket accepted, one way or the other
            assert time.monotonic() < deadline, (len(made), listeners[0].refused)
            time.sleep(0.05)
        assert len(made) <= 5 and listeners[0].refused >= 35, (len(made), listeners[0].refused)
        time.sleep(2.0)  # past the old 1 s hold: the refused are still held for the 60 s read time
        closed = sum(_closed_now(sock) for sock in sockets)
        assert closed <= 1, closed  # at most the stalled one given up for a newcomer
    finally:
        for sock in sockets:
            sock.close()
        server.should_exit = True
        thread.join(timeout=15)


def _need_second_loopback() -> None:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.2", 0))
        except OSError as exc:  # e.g. macOS configures only 127.0.0.1
            pytest.skip(f"no second loopback address here: {exc}")


def _closed_now(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1024) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_a_flood_of_one_error_is_logged_once_without_traceback() -> None:
    records = []
    logger = logging.getLogger("csr_marl.test_flood")
    logger.propagate = False
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    logger.addFilter(OncePerInterval(60))
    for _ in range(500):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            logger.exception("socket.accept() out of system resource")
    assert len(records) == 1 and records[0].exc_info is None and "Too many open files" in records[0].getMessage()


# --- item 3: a rate per client -------------------------------------------------------------------------
def test_token_buckets_allow_a_burst_then_the_rate() -> None:
    buckets = TokenBuckets(rate=2.0, burst=3)
    assert [buckets.take("a", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a", now=0.0) == pytest.approx(0.5)
    assert buckets.take("b", now=0.0) == 0.0  # another client has its own bucket
    assert buckets.take("a", now=0.5) == 0.0
    assert buckets.take("c", now=0.0, cost=10) == 0.0  # a cost over the burst goes through from a full bucket
    assert buckets.take("c", now=0.0) == pytest.approx(4.0)  # and is paid in full before the next request


def test_reservations_queue_in_turn_and_stop_at_the_longest_wait() -> None:
    """Newcomers reserve from one shared bucket: each waits for those before it, none past ``longest``."""
    buckets = TokenBuckets(rate=2.0, burst=2)
    waits = [buckets.reserve("newcomers", longest=1.0, now=0.0) for _ in range(6)]
    assert waits == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.5, 1.5])  # the last two over the longest: nothing taken
    assert buckets.reserve("newcomers", longest=1.0, now=1.0) == pytest.approx(0.5)  # a second refilled the two in debt
    assert not buckets.knows("someone") and buckets.knows("newcomers")


def test_a_reset_costs_more_of_the_rate_than_a_step() -> None:
    from csr_marl.serve.guard import RESET_COST

    buckets = TokenBuckets(rate=1.0, burst=RESET_COST)
    assert buckets.take("a", now=0.0, cost=RESET_COST) == 0.0
    assert buckets.take("a", now=1.0, cost=RESET_COST) == pytest.approx(RESET_COST - 1)
    assert buckets.take("a", now=1.0) == 0.0  # a step fits where a reset does not


def test_a_client_over_its_rate_gets_429_with_retry_after(tmp_path: Path) -> None:
    args = ["--scenario", "tasks/resolve", "--rate-per-second", "0.5", "--rate-burst", "3"]
    with running_server(tmp_path / "log", args) as served:
        spammer = {"X-Forwarded-For": "203.0.113.9"}  # a client behind a trusted proxy (127.0.0.1)
        answers = [_status_and_retry(f"{served.url}/health", spammer) for _ in range(6)]
        assert [status for status, _ in answers[:3]] == [200, 200, 200], answers
        refused = [(status, retry) for status, retry in answers[3:] if status == 429]
        assert refused and all(retry is not None and int(retry) >= 1 for _, retry in refused), answers
        other = {"X-Forwarded-For": "198.51.100.7"}
        assert _status_and_retry(f"{served.url}/health", other)[0] == 200  # a well-behaved client still gets in
        # A client on the server's own machine (a trainer) is the operator: not limited by default.
        assert {_status_and_retry(f"{served.url}/health", {})[0] for _ in range(6)} == {200}


def _status_and_retry(url: str, headers: dict[str, str]) -> tuple[int, str | None]:
    import json
    import urllib.error
    import urllib.request

    body = json.dumps({"seed": 0}).encode() if url.endswith("/reset") else None
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After")
