"""What a server facing the internet needs: limits per client, an override allow-list, a bearer token.

- :class:`ServerLimits`: the session cap and the work budget of each request (simulated tickets and
  wall time per ``reset`` and per ``step``), the largest frame and body read, the idle timeout.
- :func:`checked_overrides`: a client's scenario overrides, limited to :data:`CLIENT_OVERRIDES`. No
  path-valued field is reachable from the network: a client names a ticket bank the server ships
  (``tickets.bank: default``) and never a file; an arrival trace is the operator's choice only.
- :class:`SessionSlots`: WebSocket sessions and HTTP ``/reset`` / ``/step`` calls share one cap.
- :class:`RequestGuard`: ASGI middleware checking the bearer token on every route and on the
  WebSocket handshake, and refusing request bodies over the limit before the app reads them.
- :data:`SERVER_STOPPING`: set when the server is told to stop; every running request stops at once.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.loading import scenarios_dir

#: Set on SIGTERM / SIGINT: every request's work budget includes it, so the core stops within ms.
SERVER_STOPPING = threading.Event()

#: Dotted scenario keys a client may override (a key and everything under it). Nothing here is a path.
CLIENT_OVERRIDES = (
    "horizon_minutes", "warmup_minutes", "max_tickets",
    "arrivals.rate_per_hour", "arrivals.profile", "arrivals.surges",
    "customers", "staffing", "handle_times", "service_level", "sla_minutes", "rewards",
    "observation", "workflow", "tickets.split", "tickets.noise", "tickets.bank",
)
_MESSAGE_CHARS = 500  # the longest error line a client is sent


class ClientError(ValueError):
    """A request the server will not run as sent; the message (one line) is safe to send back."""


@dataclass(frozen=True)
class ServerLimits:
    """The server's limits on each client (``csr-marl serve`` options; defaults documented there)."""

    max_sessions: int = 64
    max_tickets_per_call: int = 5_000
    max_seconds_per_call: float = 10.0
    max_message_bytes: int = 1 << 20
    idle_seconds: float = 600.0
    auth_token: str | None = field(default=None, repr=False)  # never in a log line

    def __post_init__(self) -> None:
        checks = (
            ("max_sessions", self.max_sessions >= 1, "at least 1"),
            ("max_tickets_per_call", self.max_tickets_per_call >= 1, "at least 1"),
            ("max_seconds_per_call", 0 < self.max_seconds_per_call < float("inf"), "a positive number of seconds"),
            ("max_message_bytes", self.max_message_bytes >= 1024, "at least 1024"),
            ("idle_seconds", 0 < self.idle_seconds < float("inf"), "a positive number of seconds"),
        )
        for name, ok, wanted in checks:
            if not ok:
                raise ValueError(f"{name.replace('_', '-')} {getattr(self, name)!r}: use {wanted}")
        if self.auth_token is not None and len(self.auth_token) < 16:
            raise ValueError("auth-token: use at least 16 characters (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')")


def short(text: str, limit: int = _MESSAGE_CHARS) -> str:
    """One line of at most ``limit`` characters: what a client is sent back."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def shipped_banks() -> list[str]:
    """Ticket banks a client may name: the YAML files of the scenarios folder's ``tickets/``."""
    return sorted(path.stem for path in (scenarios_dir() / "tickets").glob("*.yaml"))


def checked_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A client's overrides if every key lies in :data:`CLIENT_OVERRIDES`, a bank named by its
    stem (``default``) mapped to the shipped file; else :class:`ClientError` naming the first key."""
    checked: dict[str, Any] = {}
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise ClientError("reset: override keys must be dotted strings, e.g. staffing.resolver")
        for path, leaf in _leaves(key, value):
            if not any(path == allowed or path.startswith(allowed + ".") for allowed in CLIENT_OVERRIDES):
                raise ClientError(
                    f"reset: override {short(path)!r} is not open to clients; they may set "
                    f"{', '.join(CLIENT_OVERRIDES)} (the operator sets the rest with csr-marl serve --set)"
                )
            # A bank is a shipped name and nothing else (a mapping under it would pass a prefix check).
            if path.startswith("tickets.bank") and (path != "tickets.bank" or leaf not in shipped_banks()):
                raise ClientError(
                    f"reset: tickets.bank names a bank the server ships: {', '.join(shipped_banks())}"
                )
        checked[key] = _with_bank_files(key, value)
    return checked


def _leaves(key: str, value: Any) -> list[tuple[str, Any]]:
    """Every dotted path a (possibly nested) override sets; an empty mapping is its own leaf."""
    found: list[tuple[str, Any]] = []
    stack = [(key, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, Mapping) and item:
            for child, inner in item.items():
                if not isinstance(child, str):
                    raise ClientError("reset: override keys must be strings")
                stack.append((f"{path}.{child}", inner))
        else:
            found.append((path, item))
    return found


def _with_bank_files(key: str, value: Any) -> Any:
    """``tickets.bank: default`` -> the shipped file, wherever the bank sits in the override."""
    if key == "tickets.bank":
        return _bank_file(value)
    if key == "tickets" and isinstance(value, Mapping) and "bank" in value:
        return {**value, "bank": _bank_file(value["bank"])}
    return value


def _bank_file(stem: str) -> str:
    return (Path("tickets") / f"{stem}.yaml").as_posix()


class SessionSlots:
    """One cap for WebSocket sessions (a slot each while connected) and HTTP calls (one while running)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.taken = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.taken >= self.capacity:
                return False
            self.taken += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.taken = max(0, self.taken - 1)


class RequestGuard:
    """ASGI middleware: the bearer token on every request and handshake; request bodies bounded."""

    def __init__(self, app: Any, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.expected is not None:
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                if kind == "websocket":  # closing before accepting rejects the handshake (HTTP 403)
                    await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
                else:
                    await _reply(send, 401, "missing or wrong bearer token (send Authorization: Bearer TOKEN)",
                                 [(b"www-authenticate", b"Bearer")])
                return
        if kind == "http" and scope.get("method") in ("POST", "PUT", "PATCH"):
            body, more = b"", True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                more = message.get("more_body", False)
                if len(body) > self.max_body_bytes:
                    await _reply(send, 413, f"request body over {self.max_body_bytes} bytes")
                    return
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def buffered() -> dict[str, Any]:
                return replay.pop() if replay else await receive()

            await self.app(scope, buffered, send)
            return
        await self.app(scope, receive, send)


async def _reply(send: Any, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
