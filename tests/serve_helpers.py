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


# --- a stand-in reverse proxy: a real process on 127.0.0.1, as nginx with `X-Forwarded-For $remote_addr` ---
def _proxy_main(listen_port: int, upstream_port: int, bind: str, ready: str) -> None:
    """Accept on 127.0.0.1:``listen_port``, connect to the server from ``bind``, and pass each connection
    on with ``X-Forwarded-For: <the client's address>`` (any the client sent is dropped) on its request."""
    import asyncio

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        peer = client_writer.get_extra_info("peername")[0]
        try:
            head = await client_reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            client_writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")[:-2]
        kept = [line for line in lines[1:] if not line.lower().startswith(("x-forwarded-for:", "connection:"))]
        upgrade = any(line.lower().startswith("upgrade:") for line in lines)
        head = "\r\n".join([lines[0], *kept, f"X-Forwarded-For: {peer}",
                            "Connection: Upgrade" if upgrade else "Connection: close", "", ""]).encode("latin-1")
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream_port, local_addr=(bind, 0))
        server_writer.write(head)
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        Path(ready).write_text("up")
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


@contextmanager
def running_proxy(upstream_port: int, bind: str, tmp: Path) -> Iterator[str]:
    """The stand-in proxy in its own process, connecting from ``bind``; yields its base URL."""
    port, ready = free_port(), tmp / "proxy-ready"
    process = subprocess.Popen([sys.executable, __file__, "proxy", str(port), str(upstream_port), bind, str(ready)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the stand-in proxy did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


if __name__ == "__main__" and sys.argv[1:2] == ["proxy"]:
    _proxy_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
