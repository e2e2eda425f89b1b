"""What serving costs per step: a WebSocket round trip to `csr-marl serve` beside the bare `TextSession.step`.

A seeded agent that picks uniformly among the tools offered (arguments filled from each tool's
JSON schema) plays `--scenario` in-process on a `csr_marl.text.TextSession`; each `step` is timed.
The same calls are then replayed on a real server (`csr-marl serve` in a subprocess on 127.0.0.1)
through the framework's client (`csr_marl.serve.client.ContactCenterClient`, async, and its `.sync()`
wrapper), each round trip timed at the client, and every reward checked against the in-process run.
Overhead = served step time - bare step time for the same step. Target: median overhead below 2 ms.

    python benchmarks/server_overhead.py                 # prints the figures
    python benchmarks/server_overhead.py --write         # also writes results/server_overhead.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from csr_marl.serve.client import ContactCenterClient, ToolCallAction
from csr_marl.text import TextSession
from csr_marl.whatif.store import atomic_write

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
Call = tuple[str, dict[str, Any]]


def schema_arguments(function: dict[str, Any]) -> dict[str, Any]:
    """Legal-looking arguments for a tool: an enum's first value, 0 for numbers, a word for text."""
    arguments: dict[str, Any] = {}
    for key, prop in function["parameters"]["properties"].items():
        if "enum" in prop:
            arguments[key] = prop["enum"][0]
        elif prop.get("type") in ("number", "integer"):
            arguments[key] = 0
        else:
            arguments[key] = "Thanks for waiting: this is done."
    return arguments


def bare_episodes(scenario: str, seed: int, steps: int) -> tuple[list[tuple[int, list[Call], list[float]]], list[float]]:
    """Whole days in-process until ``steps`` steps: per day (seed, calls, rewards), and each step's seconds."""
    rng = random.Random(seed)
    days, seconds = [], []
    session = TextSession(scenario, roles=("resolver",), colleagues="heuristic")
    day_seed = seed
    while len(seconds) < steps:
        turn = session.reset(seed=day_seed)
        calls, rewards = [], []
        while turn is not None and len(seconds) < steps:
            function = rng.choice(turn.tools)["function"]
            call = (function["name"], schema_arguments(function))
            started = time.perf_counter()
            result = session.step(*call)
            seconds.append(time.perf_counter() - started)
            calls.append(call)
            rewards.append(result.reward)
            turn = result.turn
        days.append((day_seed, calls, rewards))
        day_seed += 1
    return days, seconds


def start_server(scenario: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--scenario", scenario,
               "--roles", "resolver", "--log-level", "warning"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2).close()
            return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"the server did not start ({' '.join(command)})") from None
            time.sleep(0.2)


def check(day_seed: int, i: int, reward: float | None, expected: float) -> None:
    if reward is None or abs(reward - expected) > 1e-9:
        raise SystemExit(f"day {day_seed}, step {i}: served reward {reward} != in-process {expected}")


async def served_async(url: str, scenario: str, days: list[tuple[int, list[Call], list[float]]]) -> list[float]:
    seconds = []
    async with ContactCenterClient(base_url=url) as env:
        for day_seed, calls, rewards in days:
            await env.reset(seed=day_seed, scenario=scenario)
            for i, (name, arguments) in enumerate(calls):
                action = ToolCallAction(tool=name, arguments=arguments)
                started = time.perf_counter()
                result = await env.step(action)
                seconds.append(time.perf_counter() - started)
                check(day_seed, i, result.reward, rewards[i])
    return seconds


def served_sync(url: str, scenario: str, days: list[tuple[int, list[Call], list[float]]]) -> list[float]:
    seconds = []
    with ContactCenterClient(base_url=url).sync() as env:
        for day_seed, calls, rewards in days:
            env.reset(seed=day_seed, scenario=scenario)
            for i, (name, arguments) in enumerate(calls):
                action = ToolCallAction(tool=name, arguments=arguments)
                started = time.perf_counter()
                result = env.step(action)
                seconds.append(time.perf_counter() - started)
                check(day_seed, i, result.reward, rewards[i])
    return seconds


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000.0


def measure(args: argparse.Namespace) -> list[tuple[str, list[float], list[float]]]:
    days, bare = bare_episodes(args.scenario, args.seed, args.steps)
    process, url = start_server(args.scenario)
    try:
        warmup = [(days[0][0], days[0][1][:100], days[0][2][:100])]  # not timed: imports, the first server session
        asyncio.run(served_async(url, args.scenario, warmup))
        served = asyncio.run(served_async(url, args.scenario, days))
        served_blocking = served_sync(url, args.scenario, days)
    finally:
        process.terminate()
        process.wait(timeout=10)
    return [("async client", bare, served), ("sync client (.sync())", bare, served_blocking)]


def report(args: argparse.Namespace, rows: list[tuple[str, list[float], list[float]]]) -> str:
    bare = rows[0][1]
    lines = [
        f"`{args.scenario}`, client plays resolver (heuristic colleagues), {len(bare):,} steps of a seeded agent "
        f"choosing uniformly among the tools offered (seed {args.seed}); server and client on one machine "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}), "
        f"Python {platform.python_version()}. Every served reward equals the in-process one.",
        "",
        "| path | median step (ms) | p99 step (ms) | median overhead (ms) | p99 overhead (ms) | median ratio |",
        "|---|---|---|---|---|---|",
        f"| bare `TextSession.step` | {ms(bare, 50):.3f} | {ms(bare, 99):.3f} | – | – | 1.0 |",
    ]
    for name, bare_s, served in rows:
        overhead = [s - b for s, b in zip(served, bare_s)]
        ratio = statistics.median(served) / statistics.median(bare_s)
        lines.append(
            f"| WebSocket, {name} | {ms(served, 50):.3f} | {ms(served, 99):.3f} | {ms(overhead, 50):.3f} | "
            f"{ms(overhead, 99):.3f} | {ratio:.1f} |"
        )
    met = all(ms([s - b for s, b in zip(served, bare_s)], 50) < 2.0 for _, bare_s, served in rows)
    lines += ["", f"Target (median overhead below 2 ms): {'met' if met else 'NOT met'}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="standard_day")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="write results/server_overhead.md")
    args = parser.parse_args()
    text = report(args, measure(args))
    print(text)
    if args.write:
        command = "python benchmarks/server_overhead.py " + " ".join(sys.argv[1:])
        atomic_write(RESULTS / "server_overhead.md", f"# Server overhead per step\n\n{text}\n\n`{command.strip()}`\n")


if __name__ == "__main__":
    main()
