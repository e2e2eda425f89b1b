"""A real ``csr-marl serve`` process on 127.0.0.1 for tests and the load benchmark."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Served:
    """A running server: its base URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request(url: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, Any]:
    """(status, JSON body) of a GET (no body) or POST to ``url``; HTTP errors are returned, not raised."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text.decode(errors="replace")


@contextmanager
def running_server(log: Path, args: Sequence[str] = (), token: str | None = None) -> Iterator[Served]:
    """``python -m csr_marl serve`` with ``args`` on a free port, up and answering ``/health``."""
    port = free_port()
    command = [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--log-level", "warning", *args]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    served = Served(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(f"{served.url}/health", headers=headers, timeout=5)[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert process.poll() is None, f"the server exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"the server did not come up: {log.read_text()}"
            time.sleep(0.2)
        yield served
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=15)
