"""Well-behaved clients beside hostile ones on one `csr-marl serve`: latency, errors, server memory.

A real server (`csr-marl serve`, default limits, in a subprocess on 127.0.0.1) serves `--clients`
well-behaved clients (the framework's async `ContactCenterClient`, one asyncio loop) that each play
`--days` whole days of `tasks/resolve` as the resolver with a plain scripted agent, timing every
step at the client. The run is made twice on fresh servers: alone, then under attack by `--hostile`
clients in a separate process, each looping one of:

- a runaway WebSocket reset (no resolver turn ever comes: 10,000 tickets an hour for 10,000 minutes);
- the same reset over HTTP `POST /reset`;
- the runaway reset, disconnecting 0.2 s after sending it;
- an oversized frame (2 MB, over the 1 MB limit: the server closes that connection);
- malformed frames: invalid JSON, 100,000 brackets, binary frames, unknown types, junk tool calls.

Reported per run: the well-behaved clients' step latency (median, p99), their errors (any exception
or error frame), the server's peak RSS (sampled every 0.2 s) and CPU seconds, the hostile requests
made, and the machine's load average. Then: memory per session, from the server's RSS after 64 idle
sessions have each reset a day. Every phase has a wall-clock bound (`--max-seconds`).

    python benchmarks/server_load.py                          # prints the figures
    python benchmarks/server_load.py --clients 8 --days 1     # a quick look
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
ATTACKS = ("runaway_ws", "runaway_http", "runaway_then_leave", "oversized_frame", "malformed_frames")


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
        async with ContactCenterClient(base_url=url, message_timeout_s=120) as client:
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
def hostile(url: str, attack: str, stop: Any, counts: Any) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    ws_url = url.replace("http://", "ws://") + "/ws"
    frames = ["{not json", "[" * 100_000, b"\x00binary", json.dumps({"type": "launch"}),
              json.dumps({"type": "step", "data": {"tool": ["respond_user"], "arguments": "[" * 50_000}}),
              json.dumps({"type": "reset", "data": {"overrides": {"tickets.bank": "/etc/passwd"}}})]
    while not stop.is_set():
        try:
            if attack == "runaway_http":
                body = json.dumps(RUNAWAY).encode()
                request = urllib.request.Request(f"{url}/reset", data=body, headers={"Content-Type": "application/json"})
                try:
                    urllib.request.urlopen(request, timeout=60).read()
                except urllib.error.HTTPError:
                    pass
                counts[attack] += 1
                continue
            with connect(ws_url, open_timeout=30, max_size=None, close_timeout=1) as ws:
                if attack == "runaway_ws":
                    while not stop.is_set():
                        ws.send(json.dumps({"type": "reset", "data": RUNAWAY}))
                        ws.recv(timeout=60)
                        counts[attack] += 1
                elif attack == "runaway_then_leave":
                    ws.send(json.dumps({"type": "reset", "data": RUNAWAY}))
                    time.sleep(0.2)
                    counts[attack] += 1
                elif attack == "oversized_frame":
                    ws.send(json.dumps({"type": "step", "data": {"tool": "x" * (2 << 20)}}))
                    counts[attack] += 1
                    ws.recv(timeout=30)
                else:
                    while not stop.is_set():
                        for frame in frames:
                            ws.send(frame)
                            ws.recv(timeout=30)
                            counts[attack] += 1
        except (ConnectionClosed, InvalidStatus, OSError, TimeoutError):
            time.sleep(0.05)


def attack_process(url: str, hostile_count: int, attacks: list[str], stop: Any, counts: Any) -> None:
    threads = [threading.Thread(target=hostile, args=(url, attacks[i % len(attacks)], stop, counts), daemon=True)
               for i in range(hostile_count)]
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
    counts = manager.dict(dict.fromkeys(ATTACKS, 0))
    attackers = None
    if hostile_count:
        attackers = multiprocessing.Process(target=attack_process, args=(server.url, hostile_count, attacks, stop, counts))
        attackers.start()
        time.sleep(2.0)  # the attack is under way before the first well-behaved client connects
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
        "sigterm_exit_s": exit_seconds,
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
    calm = [r for r in runs if not r["hostile"]]
    attacked = [r for r in runs if r["hostile"]]
    pooled = {name: [x for r in group for x in r["latencies"]] for name, group in (("calm", calm), ("attacked", attacked))}
    ratio = percentile(pooled["attacked"], 0.99) / percentile(pooled["calm"], 0.99)
    errors = sum(len(r["errors"]) for r in runs)
    rows = "\n".join(
        f"| {r['round'] + 1} | {'under attack' if r['hostile'] else 'alone'} | {r['hostile']} | {r['steps']:,} | "
        f"{r['median_ms']:.1f} | {r['p99_ms']:.1f} | {len(r['errors'])} | {r['start_rss_mb']:.0f} → {r['peak_rss_mb']:.0f} | "
        f"{r['server_cpu_s']:.1f} | {r['wall_s']:.1f} | {r['load_before']:.1f} / {r['load_after']:.1f} | "
        f"{r['sigterm_exit_s']:.2f} |"
        for r in runs
    )
    made = "; ".join(
        f"round {r['round'] + 1}: " + ", ".join(f"{name} {count:,}" for name, count in r["hostile_requests"].items())
        for r in attacked
    )
    mem = "\n".join(f"| `{m['scenario']}` | {m['sessions']} | {m['before_mb']:.0f} | {m['after_mb']:.0f} | "
                    f"{m['per_session_mb']:.2f} |" for m in memory)
    verdict = "met" if ratio <= 2.0 and not errors else "NOT met"
    peak = max(r["peak_rss_mb"] for r in runs)
    loads = [load for r in runs for load in (r["load_before"], r["load_after"])]
    low, high = min(loads), max(loads)
    return f"""# Server under load and attack

{args.clients} well-behaved clients (the framework's async client, one asyncio loop in one process) each play
{args.days} whole day(s) of `{SCENARIO}` as the resolver with a scripted agent, against a fresh `csr-marl serve`
with its default limits (64 sessions; per call at most 5,000 tickets and 10 s), alone and then beside
{args.hostile} hostile clients in another process looping runaway resets (WebSocket, HTTP, and sent-then-left),
2 MB frames and malformed frames; {args.rounds} such pairs, alternating. Server, well-behaved clients and hostile
clients share one machine: {platform.machine()}, {os.cpu_count()} CPUs, busy with other work the whole time (load
average {low:.0f} to {high:.0f} on {os.cpu_count()} CPUs, before / after each run in the table: every process got a
fraction of a core, and the latencies below are mostly queueing for a CPU). Python {platform.python_version()}.

| round | run | hostile clients | well-behaved steps | median step (ms) | p99 step (ms) | errors (well-behaved) | server RSS start → peak (MB) | server CPU (s) | wall (s) | load avg before / after | exit after SIGTERM (s) |
|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

Hostile requests made: {made}.

Pooled over the rounds: p99 step latency {percentile(pooled["calm"], 0.99):.1f} ms alone, {percentile(pooled["attacked"], 0.99):.1f} ms
under attack: **{ratio:.2f}x** (target: at most 2x); errors of the well-behaved clients: **{errors}** (target 0);
server RSS at most **{peak:.0f} MB** (bounded by the session cap and the frame limit). Verdict: {verdict}.

## Memory per session

Server RSS with idle sessions that have each reset one day, against the server with none:

| scenario | sessions | RSS before (MB) | RSS after (MB) | per session (MB) |
|---|---|---|---|---|
{mem}

`python benchmarks/server_load.py --clients {args.clients} --days {args.days} --hostile {args.hostile} --rounds {args.rounds} --write`
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="well-behaved clients")
    parser.add_argument("--days", type=int, default=2, help="whole days each well-behaved client plays")
    parser.add_argument("--hostile", type=int, default=10, help="hostile clients (the five attacks in turn)")
    parser.add_argument("--attacks", default=",".join(ATTACKS), help="comma list of attacks to loop")
    parser.add_argument("--sessions", type=int, default=64, help="idle sessions for the memory measurement")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="bound on each run's wall time")
    parser.add_argument("--rounds", type=int, default=2, help="alone/attacked pairs of runs")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    runs = []
    for round_number in range(args.rounds):  # alone and attacked runs alternate, so drifting load hits both
        for hostile_count in (0, args.hostile):
            log = Path(tempfile.gettempdir()) / f"server_load_{os.getpid()}_{hostile_count}.log"
            result = run(args.clients, args.days, hostile_count, args.attacks.split(","), args.max_seconds, log)
            result["server_log_lines"] = len(log.read_text().splitlines())
            log.unlink()
            result["round"] = round_number
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
