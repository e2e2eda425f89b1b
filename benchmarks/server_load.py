"""Well-behaved clients beside hostile ones on one `csr-marl serve`: latency, errors, server memory.

A real server (`csr-marl serve`, default limits, in a subprocess on 127.0.0.1) serves `--clients`
well-behaved clients (the framework's async `ContactCenterClient`, one asyncio loop) that each play
`--days` whole days of `tasks/resolve` as the resolver with a plain scripted agent, timing every
step at the client. Each round runs on fresh servers: alone, then under each attack mode in turn,
`--hostile` clients in a separate process looping the mode's requests:

- `runaway`: a runaway WebSocket reset (no resolver turn ever comes: 10,000 tickets an hour for 10,000
  minutes), the same over HTTP `POST /reset`, the runaway reset left 0.2 s after sending it, a 2 MB
  frame (over the 1 MB limit), malformed frames (invalid JSON, 100,000 brackets, binary, junk);
- `surges`: resets with many distinct arrival surges, over the WebSocket and HTTP (alternately 900,
  within the server's 1,000 override entries, and 4,000, refused by cost before anything is built);
- `shifts`: the same with shift changes (900 and 10,000);
- `slowloris`: 1,100 sockets, each sending half a request line and waiting, reopened as they close,
  from 127.0.0.2 (another client, as an attacker on another machine is: the server's per-address
  connection cap counts it apart from the well-behaved clients on 127.0.0.1);
- `spam`: reset/step as fast as the server answers, over the WebSocket and HTTP;
- `hoarding`: each hostile client (its own address) opens WebSocket sessions until refused and holds
  them silent, with a `state` keep-alive every 10 s, reopening any that close; the well-behaved
  clients start once the hoarded sessions are past the server's reclaim time (30 s), so a full
  server makes room by closing them;
- `hoarding_one`: the same from one address (every hostile client speaks for 203.0.113.1), and the
  well-behaved clients start 2 s after it, well inside the 30 s before idle sessions are reclaimed:
  what keeps their places free is the per-client session cap alone;
- `addresses`: 5 addresses per hostile client (40 for 8), each sending `POST /reset` of `standard_day`
  at 4.5 a second, just under its rate limit (a reset costs 10 of its 50 tokens a second);
- `one_step`: each hostile client sends `POST /step` calls over one kept-alive connection (as a proxy
  forwards its clients' calls) as fast as the server answers, each call from a fresh address (up to
  8,192 per hostile client), so no address ever meets its own rate limit;
- `surrogates`: steps whose text is a lone surrogate (`"\ud800"`, as an object and as a JSON
  string), as fast as the server answers, over the WebSocket and HTTP;
- `refusals`: steps with 15,000 unknown argument names (a 0.19 MB frame, under the 256 KiB limit) as
  fast as the rate allows (one token per KiB: a frame every 4 s per address).

Every client sends its own `X-Forwarded-For`, as clients behind a reverse proxy on the same machine
do (the server trusts it from 127.0.0.1), so each has its own rate limit. Reported per run: the
well-behaved clients' step latency (median, p99), their errors (any exception or error frame), the
server's peak RSS (sampled every 0.2 s) and CPU seconds, its log lines, the hostile requests made,
and the machine's load average. Per mode: the p99 under attack against the p99 alone (target: at most
2x). Then: memory per session, from the server's RSS after 64 idle sessions have each reset a day.
Every phase has a wall-clock bound (`--max-seconds`).

    python benchmarks/server_load.py                          # prints the figures
    python benchmarks/server_load.py --clients 8 --days 1     # a quick look
    python benchmarks/server_load.py --modes slowloris,spam   # some modes only
    python benchmarks/server_load.py --write                  # also writes results/server_load.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from csr_marl.serve.client import ContactCenterClient, ToolCallAction
from csr_marl.whatif.store import atomic_write

RESULTS = Path(__file__).parent / "results" / "server_load.md"
ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "tasks/resolve"
RUNAWAY = {"roles": ["resolver"], "scenario": "standard_day",
           "overrides": {"staffing.resolver": 0, "arrivals": {"rate_per_hour": 10000}, "horizon_minutes": 10000}}
DIAGNOSTIC = ("check_payment", "check_order_status", "troubleshoot")
MODES = {
    "runaway": ("runaway_ws", "runaway_http", "runaway_then_leave", "oversized_frame", "malformed_frames"),
    "surges": ("surges_ws", "surges_http"),
    "shifts": ("shifts_ws", "shifts_http"),
    "slowloris": ("slowloris",),
    "spam": ("spam_ws", "spam_http"),
    "hoarding": ("hoarding",),
    "hoarding_one": ("hoarding_one",),
    "addresses": ("addresses",),
    "one_step": ("one_step_each",),
    "surrogates": ("surrogates_ws", "surrogates_http"),
    "refusals": ("huge_refusal",),
}
HOARD_ATTEMPTS = 64  # sessions each hoarder tries to hold
RECLAIM_SECONDS = 30.0  # the server's default --reclaim-idle-seconds: the hoarding mode waits past it
ADDRESSES_PER_CLIENT = 5  # the `addresses` mode: compliant addresses per hostile client
ONE_STEP_ADDRESSES = 8_192  # the `one_step` mode: fresh addresses per hostile client, one step call each
REFUSED_NAMES = 15_000  # unknown argument names in a `refusals` step: the most a frame under 256 KiB holds
COMPLIANT_RESETS_PER_SECOND = 4.5  # just under the default 50 tokens a second at 10 a reset
ATTACKS = tuple(attack for attacks in MODES.values() for attack in attacks)
SLOWLORIS_SOCKETS = 1_100
# The slowloris attacker is another client: its sockets come from another loopback address (all of
# 127.0.0.0/8 is this machine's on Linux), so the server's per-address connection cap sees it apart
# from the well-behaved clients on 127.0.0.1, as it would see an attacker on another machine.
ATTACKER_ADDRESS = "127.0.0.2"


def schedule_reset(field: str, count: int) -> dict[str, Any]:
    """A reset whose overrides hold ``count`` distinct surges or shift changes over a 480-minute day."""
    if field == "surges":
        entries = [{"start_minute": i * 400 / count, "end_minute": i * 400 / count + 0.05, "multiplier": 1.5}
                   for i in range(count)]
        return {"scenario": "standard_day", "roles": ["resolver"], "overrides": {"arrivals.surges": entries}}
    entries = [{"at_minute": round(i * 470 / count, 4), "resolver": 1 + i % 4} for i in range(count)]
    return {"scenario": "standard_day", "roles": ["resolver"], "overrides": {"staffing.shifts": entries}}


SCHEDULE_RESETS = {f"{field}_{size}": schedule_reset(field, count) for field in ("surges", "shifts")
                   for size, count in (("ok", 900), ("big", 4_000 if field == "surges" else 10_000))}


# --- the server ---------------------------------------------------------------------------------
class Server:
    """`python -m csr_marl serve` on a free port, with RSS and CPU sampled from /proc."""

    def __init__(self, args: list[str], log: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        command = [sys.executable, "-m", "csr_marl", "serve", "--port", str(self.port), "--scenario", SCENARIO,
                   "--log-level", "warning", *args]
        self.log = log
        with log.open("w") as out:  # a file, not a pipe: a pipe nobody reads would stall the server
            self.process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        self.peak_rss = self.rss()
        self.start_rss = self.peak_rss
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def rss(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _sample(self) -> None:
        while self._sampling and self.process.poll() is None:
            self.peak_rss = max(self.peak_rss, self.rss())
            time.sleep(0.2)

    def stop(self) -> float:
        """SIGTERM; returns the seconds the server took to exit."""
        self._sampling = False
        started = time.monotonic()
        self.process.terminate()
        self.process.wait(timeout=30)
        return time.monotonic() - started


# --- well-behaved clients -----------------------------------------------------------------------
def scripted(text: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Pick the first waiting ticket; run one diagnostic; answer the customer."""
    offered = {tool["function"]["name"]: tool["function"] for tool in tools}
    if "pick_ticket" in offered:
        return "pick_ticket", {"ticket_id": offered["pick_ticket"]["parameters"]["properties"]["ticket_id"]["enum"][0]}
    if "Steps done" not in text:
        for name in DIAGNOSTIC:
            if name in offered:
                return name, {}
    return "respond_user", {"message": "Thanks for your patience: this is sorted now."}


async def good_client(url: str, index: int, days: int, latencies: list[float], errors: list[str]) -> int:
    steps = 0
    try:
        headers = {"X-Forwarded-For": f"198.51.100.{index % 250 + 1}"}  # its own client address
        async with ContactCenterClient(base_url=url, message_timeout_s=120, headers=headers) as client:
            for day in range(days):
                result = await client.reset(seed=1000 * index + day)
                while not result.done:
                    observation = result.observation
                    if observation.error:
                        errors.append(f"client {index}: refused call: {observation.error}")
                    name, arguments = scripted(observation.text, observation.tools)
                    started = time.perf_counter()
                    result = await client.step(ToolCallAction(tool=name, arguments=arguments))
                    latencies.append(time.perf_counter() - started)
                    steps += 1
    except Exception as exc:  # noqa: BLE001 -- every failure of a well-behaved client is counted
        errors.append(f"client {index}: {type(exc).__name__}: {exc}")
    return steps


async def good_clients(url: str, clients: int, days: int) -> tuple[list[float], list[str], int]:
    latencies: list[float] = []
    errors: list[str] = []
    steps = await asyncio.gather(*(good_client(url, i, days, latencies, errors) for i in range(clients)))
    return latencies, errors, sum(steps)


# --- hostile clients (a separate process, so their own cost is not the measured clients') --------
def hostile(url: str, attack: str, stop: Any, counts: Any, index: int) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    if attack == "slowloris":
        slowloris(url, stop, counts)
        return
    address = {"X-Forwarded-For": f"203.0.113.{index % 250 + 1}"}  # as a client behind the proxy
    ws_url = url.replace("http://", "ws://") + "/ws"
    if attack in ("hoarding", "hoarding_one", "addresses", "one_step_each", "huge_refusal") or attack.startswith("surrogates"):
        NEW_ATTACKS[attack](url, address, index, stop, counts)
        return
    frames = ["{not json", "[" * 100_000, b"\x00binary", json.dumps({"type": "launch"}),
              json.dumps({"type": "step", "data": {"tool": ["respond_user"], "arguments": "[" * 50_000}}),
              json.dumps({"type": "reset", "data": {"overrides": {"tickets.bank": "/etc/passwd"}}})]
    turn = 0
    while not stop.is_set():
        turn += 1
        try:
            if attack.endswith("_http"):
                post(url, hostile_reset(attack, turn), address)
                counts[attack] += 1
                continue
            with connect(ws_url, open_timeout=30, max_size=None, close_timeout=1, additional_headers=address) as ws:
                if attack == "runaway_then_leave":
                    ws.send(json.dumps({"type": "reset", "data": RUNAWAY}))
                    time.sleep(0.2)
                    counts[attack] += 1
                elif attack == "oversized_frame":
                    ws.send(json.dumps({"type": "step", "data": {"tool": "x" * (2 << 20)}}))
                    counts[attack] += 1
                    ws.recv(timeout=30)
                elif attack == "malformed_frames":
                    while not stop.is_set():
                        for frame in frames:
                            ws.send(frame)
                            ws.recv(timeout=30)
                            counts[attack] += 1
                else:  # runaway_ws, surges_ws, shifts_ws, spam_ws: one reset after another
                    while not stop.is_set():
                        turn += 1
                        ws.send(json.dumps({"type": "reset", "data": hostile_reset(attack, turn)}))
                        ws.recv(timeout=60)
                        if attack == "spam_ws":
                            ws.send(json.dumps({"type": "step", "data": {"tool": "no_such_tool", "arguments": {}}}))
                            ws.recv(timeout=60)
                        counts[attack] += 1
        except (ConnectionClosed, InvalidStatus, OSError, TimeoutError):
            time.sleep(0.05)


def hoarding(url: str, address: dict[str, str], index: int, stop: Any, counts: Any, attack: str = "hoarding") -> None:
    """Hold as many silent sessions as the server gives this address; keep them alive; reopen closed ones."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    ws_url = url.replace("http://", "ws://") + "/ws"
    held: list[Any] = []
    last_ping = time.monotonic()
    while not stop.is_set():
        while len(held) < HOARD_ATTEMPTS and not stop.is_set():
            try:
                ws = connect(ws_url, open_timeout=30, close_timeout=1, additional_headers=address)
            except (InvalidStatus, OSError, TimeoutError):
                break
            counts[attack] += 1
            try:
                ws.recv(timeout=0.2)  # a refusal comes at once: the address holds its share
                ws.close()
                break
            except TimeoutError:
                held.append(ws)  # nothing said: the session is ours (unless a late refusal comes: counted below)
            except ConnectionClosed:
                break
        stop.wait(1.0)
        if time.monotonic() - last_ping > 10:  # a keep-alive: it does not count as work
            last_ping = time.monotonic()
            for ws in list(held):
                try:
                    ws.send(json.dumps({"type": "state"}))
                except ConnectionClosed:
                    pass
        alive = []
        for ws in held:
            try:
                while True:
                    ws.recv(timeout=0)
            except TimeoutError:
                alive.append(ws)
            except ConnectionClosed:
                ws.close()
        held = alive
        hoarded(counts, index, len(held))
    for ws in held:
        ws.close()


HOARDED: dict[int, int] = {}  # sessions each hoarding thread still holds, a second after opening them
HOARDED_LOCK = threading.Lock()


def hoarded(counts: Any, index: int, holding: int) -> None:
    """Count the sessions all hoarders hold now and at most (their threads share one process)."""
    with HOARDED_LOCK:
        HOARDED[index] = holding
        counts["sessions_held"] = sum(HOARDED.values())
        counts["sessions_held_peak"] = max(counts["sessions_held_peak"], counts["sessions_held"])


def many_addresses(url: str, address: dict[str, str], index: int, stop: Any, counts: Any) -> None:
    """ADDRESSES_PER_CLIENT clients, each resetting standard_day just under its own rate limit."""

    def compliant(number: int) -> None:
        headers = {"X-Forwarded-For": f"198.18.{index}.{number + 1}"}
        body = {"scenario": "standard_day", "roles": ["resolver"]}
        while not stop.is_set():
            started = time.monotonic()
            try:
                post(url, {**body, "seed": counts["addresses"]}, headers)
                counts["addresses"] += 1
            except (OSError, TimeoutError):
                pass
            stop.wait(max(0.0, 1 / COMPLIANT_RESETS_PER_SECOND - (time.monotonic() - started)))

    threads = [threading.Thread(target=compliant, args=(n,), daemon=True) for n in range(ADDRESSES_PER_CLIENT)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def one_step_each(url: str, index: int, stop: Any, counts: Any) -> None:
    """One cheap ``POST /step`` per fresh address, back to back, over one kept-alive connection."""
    import http.client

    body = json.dumps({"action": {"tool": "respond_user", "arguments": {"message": "hello"}}})
    host, port = url.removeprefix("http://").split(":")
    connection = None
    number = 0
    while not stop.is_set():
        at = index * ONE_STEP_ADDRESSES + number % ONE_STEP_ADDRESSES  # 198.19.0.0/16 holds 65,536: 8 clients' worth
        number += 1
        headers = {"Content-Type": "application/json", "X-Forwarded-For": f"198.19.{at // 256 % 256}.{at % 256}"}
        try:
            connection = connection or http.client.HTTPConnection(host, int(port), timeout=60)
            connection.request("POST", "/step", body=body, headers=headers)
            connection.getresponse().read()  # 200 (no day is running: a done observation) or a refusal
            counts["one_step_each"] += 1
        except (OSError, http.client.HTTPException):
            connection = None
            stop.wait(0.05)


SURROGATE_STEPS = ['{"type": "step", "data": {"tool": "respond_user", "arguments": {"message": "\\ud800"}}}',
                   '{"type": "step", "data": {"tool": "respond_user", "arguments": "{\\"message\\": \\"\\\\ud83d\\"}"}}']


def frames_loop(url: str, address: dict[str, str], attack: str, stop: Any, counts: Any) -> None:
    """A session that resets once, then sends the attack's frames as fast as the answers come."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    huge = json.dumps({"type": "step", "data": {"tool": "respond_user", "arguments": {f"k{i}": 0 for i in range(REFUSED_NAMES)}}})
    frames = [huge] if attack == "huge_refusal" else SURROGATE_STEPS
    while not stop.is_set():
        try:
            with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30, max_size=None, close_timeout=1,
                         additional_headers=address) as ws:
                ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
                ws.recv(timeout=60)
                while not stop.is_set():
                    for frame in frames:
                        ws.send(frame)
                        ws.recv(timeout=60)
                        counts[attack] += 1
        except (ConnectionClosed, InvalidStatus, OSError, TimeoutError):
            stop.wait(0.05)


def surrogates_http(url: str, address: dict[str, str], stop: Any, counts: Any) -> None:
    body = '{"action": {"tool": "respond_user", "arguments": {"message": "\\ud800"}}}'.encode()
    while not stop.is_set():
        request = urllib.request.Request(f"{url}/step", data=body, headers={"Content-Type": "application/json", **address})
        try:
            urllib.request.urlopen(request, timeout=60).read()
        except urllib.error.HTTPError:
            pass  # 422 (refused), 429
        except (OSError, TimeoutError):
            stop.wait(0.05)
        counts["surrogates_http"] += 1


NEW_ATTACKS = {
    "hoarding": hoarding,
    "hoarding_one": lambda url, address, index, stop, counts: hoarding(url, {"X-Forwarded-For": "203.0.113.1"}, index, stop, counts, "hoarding_one"),
    "addresses": many_addresses,
    "one_step_each": lambda url, address, index, stop, counts: one_step_each(url, index, stop, counts),
    "surrogates_ws": lambda url, address, index, stop, counts: frames_loop(url, address, "surrogates_ws", stop, counts),
    "surrogates_http": lambda url, address, index, stop, counts: surrogates_http(url, address, stop, counts),
    "huge_refusal": lambda url, address, index, stop, counts: frames_loop(url, address, "huge_refusal", stop, counts),
}


def hostile_reset(attack: str, turn: int) -> dict[str, Any]:
    """The reset an attack sends on its ``turn``-th request."""
    if attack.startswith("runaway"):
        return RUNAWAY
    if attack.startswith(("surges", "shifts")):
        return SCHEDULE_RESETS[f"{attack.split('_')[0]}_{'big' if turn % 2 else 'ok'}"]
    return {"scenario": SCENARIO, "roles": ["resolver"], "seed": turn}  # spam: an ordinary reset, endlessly


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> None:
    request = urllib.request.Request(f"{url}/reset", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **headers})
    try:
        urllib.request.urlopen(request, timeout=60).read()
    except urllib.error.HTTPError:
        pass  # 422, 429: the spammer does not care


def slowloris(url: str, stop: Any, counts: Any) -> None:
    """Hold up to SLOWLORIS_SOCKETS sockets, each with half a request line sent; reopen closed ones."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port = int(url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        while not stop.is_set():
            alive = []
            for sock in held:
                try:
                    closed = sock.recv(1) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    sock.close()
                else:
                    alive.append(sock)
            held = alive
            while len(held) < SLOWLORIS_SOCKETS and not stop.is_set():
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(ATTACKER_ADDRESS, 0))
                    sock.sendall(b"GET /health HTT")
                    sock.setblocking(False)
                except OSError:
                    break
                held.append(sock)
                counts["slowloris"] += 1
            time.sleep(0.1)
    finally:
        for sock in held:
            sock.close()


def attack_process(url: str, hostile_count: int, attacks: list[str], stop: Any, counts: Any) -> None:
    chosen = [attacks[i % len(attacks)] for i in range(hostile_count)]
    if "slowloris" in chosen:  # one thread holds every half-sent socket; the others do the rest
        chosen = ["slowloris"] + [a for a in chosen if a != "slowloris"]
    threads = [threading.Thread(target=hostile, args=(url, attack, stop, counts, i), daemon=True)
               for i, attack in enumerate(chosen)]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(timeout=10)


# --- a run --------------------------------------------------------------------------------------
def run(clients: int, days: int, hostile_count: int, attacks: list[str], max_seconds: float, log: Path) -> dict[str, Any]:
    server = Server([], log)
    manager = multiprocessing.Manager()
    stop = manager.Event()
    counts = manager.dict(dict.fromkeys((*ATTACKS, "sessions_held", "sessions_held_peak"), 0))
    attackers = None
    if hostile_count:
        attackers = multiprocessing.Process(target=attack_process, args=(server.url, hostile_count, attacks, stop, counts))
        attackers.start()
        # the attack is under way before the first well-behaved client connects (hoarded sessions past the reclaim time)
        time.sleep(RECLAIM_SECONDS + 3.0 if "hoarding" in attacks else 2.0)
    load_before = os.getloadavg()[0]
    cpu_before = server.cpu_seconds()
    started = time.monotonic()
    try:
        latencies, errors, steps = asyncio.run(asyncio.wait_for(good_clients(server.url, clients, days), max_seconds))
    except asyncio.TimeoutError:
        latencies, errors, steps = [], [f"the run passed its bound of {max_seconds:g} s"], 0
    wall = time.monotonic() - started
    cpu = server.cpu_seconds() - cpu_before
    stop.set()
    if attackers is not None:
        attackers.join(timeout=30)
    exit_seconds = server.stop()
    ordered = sorted(latencies)
    return {
        "hostile": hostile_count, "steps": steps, "wall_s": wall, "errors": errors, "latencies": latencies,
        "median_ms": 1000 * statistics.median(ordered) if ordered else float("nan"),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan"),
        "start_rss_mb": server.start_rss / 2**20, "peak_rss_mb": server.peak_rss / 2**20, "server_cpu_s": cpu,
        "load_before": load_before, "load_after": os.getloadavg()[0], "hostile_requests": dict(counts),
        "sigterm_exit_s": exit_seconds, "server_log_lines": len(log.read_text().splitlines()),
    }


def memory_per_session(sessions: int, scenario: str, log: Path) -> dict[str, float]:
    """Server RSS with ``sessions`` idle sessions, each after one reset, against none."""
    server = Server(["--max-sessions", str(sessions)], log)

    async def hold() -> float:
        clients = [ContactCenterClient(base_url=server.url, message_timeout_s=120) for _ in range(sessions)]
        try:
            for index, client in enumerate(clients):
                await client.reset(seed=index, scenario=scenario)
            await asyncio.sleep(1.0)
            return server.rss()
        finally:
            for client in clients:
                await client.close()

    before = server.rss()
    after = asyncio.run(hold())
    server.stop()
    return {"sessions": sessions, "scenario": scenario, "before_mb": before / 2**20, "after_mb": after / 2**20,
            "per_session_mb": (after - before) / sessions / 2**20}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def page(args: argparse.Namespace, runs: list[dict[str, Any]], memory: list[dict[str, float]]) -> str:
    modes = list(dict.fromkeys(r["mode"] for r in runs if r["hostile"]))
    pooled = {mode: [x for r in runs if r["mode"] == mode for x in r["latencies"]] for mode in ["alone", *modes]}
    calm = percentile(pooled["alone"], 0.99)
    ratios = {mode: percentile(pooled[mode], 0.99) / calm for mode in modes}
    errors = sum(len(r["errors"]) for r in runs)
    rows = "\n".join(
        f"| {r['round'] + 1} | {r['mode']} | {r['hostile']} | {r['steps']:,} | "
        f"{r['median_ms']:.1f} | {r['p99_ms']:.1f} | {len(r['errors'])} | {r['start_rss_mb']:.0f} → {r['peak_rss_mb']:.0f} | "
        f"{r['server_cpu_s']:.1f} | {r['server_log_lines']:,} | {r['wall_s']:.1f} | {r['load_before']:.1f} / {r['load_after']:.1f} | "
        f"{r['sigterm_exit_s']:.2f} |"
        for r in runs
    )
    made = "; ".join(
        f"round {r['round'] + 1} {r['mode']}: " + ", ".join(f"{name} {count:,}" for name, count in r["hostile_requests"].items()
                                                         if count and name in ATTACKS)
        for r in runs if r["hostile"]
    )
    calm_median = percentile(pooled["alone"], 0.5)
    targets = "\n".join(f"| {mode} | {', '.join(MODES[mode])} | {percentile(pooled[mode], 0.99):.1f} | **{ratios[mode]:.2f}x** | "
                        f"{percentile(pooled[mode], 0.5) / calm_median:.2f}x | {'met' if ratios[mode] <= 2.0 else 'NOT met'} |"
                        for mode in modes)
    hoard_errors = sum(len(r["errors"]) for r in runs if r["mode"] == "hoarding_one")
    held: dict[str, int] = {}  # the most sessions the hoarders held at once, per mode
    for r in runs:
        held[r["mode"]] = max(held.get(r["mode"], 0), r["hostile_requests"].get("sessions_held_peak", 0))
    mem = "\n".join(f"| `{m['scenario']}` | {m['sessions']} | {m['before_mb']:.0f} | {m['after_mb']:.0f} | "
                    f"{m['per_session_mb']:.2f} |" for m in memory)
    verdict = "met under every mode" if all(r <= 2.0 for r in ratios.values()) and not errors else "NOT met"
    peak = max(r["peak_rss_mb"] for r in runs)
    loads = [load for r in runs for load in (r["load_before"], r["load_after"])]
    low, high = min(loads), max(loads)
    return f"""# Server under load and attack

{args.clients} well-behaved clients (the framework's async client, one asyncio loop in one process) each play
{args.days} whole day(s) of `{SCENARIO}` as the resolver with a scripted agent, against a fresh `csr-marl serve`
with its default limits (64 sessions, 8 per client, the one longest without work closed to make room
when full if it has none for 30 s; per call at most 5,000 tickets and 10 s; 1,000 override entries per
reset; 50 requests a second per client with bursts of 100, and as much for all addresses not seen lately
together; 32 connections per address, past which new ones are turned away as they are accepted, held
unread for 10 s and closed; 10 s to send a request; two calls at once, the least busy client's first), alone and then beside {args.hostile} hostile clients in another process, one attack mode
at a time (`benchmarks/server_load.py` describes each; in `addresses` they speak for
{args.hostile * ADDRESSES_PER_CLIENT} addresses); {args.rounds} round(s), each mode after its own calm run.
Every client sends its own `X-Forwarded-For`, as behind a reverse proxy on the same machine; the
slowloris sockets come from 127.0.0.2, another loopback address, so the connection cap (which counts the
socket's address) sees the attacker apart from the well-behaved clients on 127.0.0.1. Server,
well-behaved clients and hostile clients share one machine: {platform.machine()}, {os.cpu_count()} CPUs, busy with
other work the whole time (load average {low:.0f} to {high:.0f} on {os.cpu_count()} CPUs, before / after each run in the
table: every process got a fraction of a core, and the latencies below are mostly queueing for a CPU).
Python {platform.python_version()}.

| round | run | hostile clients | well-behaved steps | median step (ms) | p99 step (ms) | errors (well-behaved) | server RSS start → peak (MB) | server CPU (s) | server log lines | wall (s) | load avg before / after | exit after SIGTERM (s) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

Hostile requests made: {made}.

Pooled over the rounds, the well-behaved clients' p99 step latency alone is {calm:.1f} ms; under each mode, below. A p99 over
about 1,300 steps is the 13th slowest: in a calm run it is set by the ~16 steps that queue behind the 16
clients' second-day resets, which come at about the same moment; an attack that staggers the clients can
leave fewer than 1% of steps queued, and then a p99 below the calm one.

| mode | attacks | p99 step (ms) | p99 against alone | median against alone | target (p99 at most 2x) |
|---|---|---|---|---|---|
{targets}

In `hoarding` the 8 hostile addresses held at most {held.get("hoarding", "?")} sessions at once (8 each, every
place of the server; counted by the hoarders a second after opening them); the well-behaved clients
connect {RECLAIM_SECONDS + 3:.0f} s later, past the 30 s after which a full server closes the session longest
without work to make room (a newcomer in the first 30 s of such a hoard is refused, and retries).
In `hoarding_one` one address, hoarding from {args.hostile} threads, held at most {held.get("hoarding_one", "?")} sessions (its
per-client cap); the well-behaved clients, connecting 2 s later, met {hoard_errors} errors (a refused
session would be one: the client does not retry). In `addresses` each address stays under its own
rate; what keeps the others' steps quick is the fair turns, in which a reset weighs ten steps. In
`one_step` no address is seen twice in a while, so all of them share the one bucket of addresses not
seen lately (50 calls a second).

Errors of the well-behaved clients: **{errors}** (target 0); server RSS at most **{peak:.0f} MB** (bounded by
the session cap and the frame limit). Verdict: {verdict}.

## Memory per session

Server RSS with idle sessions that have each reset one day, against the server with none:

| scenario | sessions | RSS before (MB) | RSS after (MB) | per session (MB) |
|---|---|---|---|---|
{mem}

`python benchmarks/server_load.py --clients {args.clients} --days {args.days} --hostile {args.hostile} --rounds {args.rounds} --modes {','.join(modes)}{'' if args.sessions else ' --sessions 0'} --write`
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="well-behaved clients")
    parser.add_argument("--days", type=int, default=2, help="whole days each well-behaved client plays")
    parser.add_argument("--hostile", type=int, default=10, help="hostile clients in each attacked run")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma list of attack modes: {', '.join(MODES)}")
    parser.add_argument("--sessions", type=int, default=64, help="idle sessions for the memory measurement (0: skip)")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="bound on each run's wall time")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of a calm run followed by each mode")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}; modes: {', '.join(MODES)}")
    runs = []
    for round_number in range(args.rounds):
        for mode in modes:  # a calm run before each mode, so drifting load hits both alike
            for hostile_count in (0, args.hostile):
                log = Path(tempfile.gettempdir()) / f"server_load_{os.getpid()}_{mode}_{hostile_count}.log"
                result = run(args.clients, args.days, hostile_count, list(MODES[mode]), args.max_seconds, log)
                log.unlink()
                result["round"], result["mode"] = round_number, mode if hostile_count else "alone"
                runs.append(result)
                shown = {k: v for k, v in result.items() if k not in ("errors", "latencies")}
                print(json.dumps(shown), f"errors={len(result['errors'])}", *result["errors"][:5], sep="\n", flush=True)
    memory_log = Path(tempfile.gettempdir()) / f"server_load_{os.getpid()}_memory.log"
    memory = [memory_per_session(args.sessions, scenario, memory_log) for scenario in (SCENARIO, "standard_day")] if args.sessions else []
    memory_log.unlink(missing_ok=True)
    for line in memory:
        print(json.dumps(line), flush=True)
    text = page(args, runs, memory)
    print(text)
    if args.write:
        atomic_write(RESULTS, text)
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
