"""What a server facing the internet needs: limits per client, an override allow-list, a bearer token.

- :class:`ServerLimits`: the session cap and the work budget of each request (simulated tickets and
  wall time per ``reset`` and per ``step``), the largest frame and body read, the idle timeout.
- :func:`checked_overrides`: a client's scenario overrides, limited to :data:`CLIENT_OVERRIDES`. No
  path-valued field is reachable from the network: a client names a ticket bank the server ships
  (``tickets.bank: default``) and never a file; an arrival trace is the operator's choice only.
- :func:`check_override_cost`: what building a client's scenario costs (its surges, shift changes,
  profile periods, values), refused past ``max_override_entries`` before anything is built.
- :class:`RequestGuard`: ASGI middleware checking the bearer token on every route and on the
  WebSocket handshake, the per-client and per-token rate limits (429 with ``Retry-After``; a
  WebSocket handshake is accepted and closed with code 1013 and the wait), one client's rate shared
  by every address not seen lately (a newcomer waits its turn there, at most
  :data:`NEWCOMER_WAIT_SECONDS`), and refusing request bodies over the limit before the app reads them.

Sessions per client and the fair share of the server's work are :mod:`.sessions`; who a client is
(IPv6 by /64, forwarded addresses from trusted proxies only) is :mod:`.clients`.
- :data:`SERVER_STOPPING`: set when the server is told to stop; every running request stops at once.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.loading import scenarios_dir
from ..config.scenario import MAX_SCHEDULE_ENTRIES
from .clients import TrustedProxies, client_key, is_loopback
from .ratelimit import TokenBuckets

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
RESET_COST = 10  # rate-limit tokens a reset takes (a step takes one): it builds and starts a whole day
BYTES_PER_TOKEN = 1024  # and one more token per this many bytes of a message: reading it is work too
TOKEN_RATE_FACTOR = 8  # with a bearer token and no --token-rate-per-second: the token's rate is this many clients' worth
NEWCOMERS = "newcomers"  # the one bucket shared by every address not seen lately
NEWCOMER_WAIT_SECONDS = 5.0  # a newcomer's request waits at most this long for the newcomers' bucket; past it, 429


class ClientError(ValueError):
    """A request the server will not run as sent; the message (one line) is safe to send back."""


@dataclass(frozen=True)
class ServerLimits:
    """The server's limits on each client (``csr-marl serve`` options; defaults documented there)."""

    max_sessions: int = 64
    max_tickets_per_call: int = 5_000
    max_seconds_per_call: float = 10.0
    max_message_bytes: int = 1 << 18  # 256 KiB: a reset with 1,000 override entries takes under 100 KiB
    idle_seconds: float = 600.0
    auth_token: str | None = field(default=None, repr=False)  # never in a log line
    max_override_entries: int = 1_000
    rate_per_second: float = 50.0  # requests (HTTP calls, WebSocket messages) per client address; 0: off
    rate_burst: int = 100
    token_rate_per_second: float | None = None  # the same per bearer token (all clients sharing it); 0: off; None: auto
    rate_loopback: bool = False  # whether clients on this machine (127.0.0.0/8, ::1) get the per-client limits too
    max_connections_per_client: int = 32  # open connections per address, WebSockets included; 0: no cap
    request_read_seconds: float = 10.0  # a request's headers and body must arrive within this
    max_sessions_per_client: int = 8  # sessions (and running HTTP calls) one client may hold
    reclaim_idle_seconds: float = 30.0  # when the server is full, a session without a reset or step this long makes room
    trusted_proxies: str = "127.0.0.1"  # addresses whose X-Forwarded-For names the client ("": none, "*": all)

    def __post_init__(self) -> None:
        checks = (
            ("max_sessions", self.max_sessions >= 1, "at least 1"),
            ("max_tickets_per_call", self.max_tickets_per_call >= 1, "at least 1"),
            ("max_seconds_per_call", 0 < self.max_seconds_per_call < float("inf"), "a positive number of seconds"),
            ("max_message_bytes", self.max_message_bytes >= 1024, "at least 1024"),
            ("idle_seconds", 0 < self.idle_seconds < float("inf"), "a positive number of seconds"),
            ("max_override_entries", 0 <= self.max_override_entries <= MAX_SCHEDULE_ENTRIES, f"0 to {MAX_SCHEDULE_ENTRIES}"),
            ("rate_per_second", 0 <= self.rate_per_second < float("inf"), "requests a second, 0 for no limit"),
            ("rate_burst", self.rate_burst >= 1, "at least 1"),
            ("token_rate_per_second", self.token_rate_per_second is None or 0 <= self.token_rate_per_second < float("inf"),
             "requests a second, 0 for no limit"),
            ("max_connections_per_client", self.max_connections_per_client >= 0, "0 (no cap) or more"),
            ("request_read_seconds", 0 < self.request_read_seconds < float("inf"), "a positive number of seconds"),
            ("max_sessions_per_client", 1 <= self.max_sessions_per_client, "at least 1"),
            ("reclaim_idle_seconds", 0 < self.reclaim_idle_seconds < float("inf"), "a positive number of seconds"),
        )
        for name, ok, wanted in checks:
            if not ok:
                raise ValueError(f"{name.replace('_', '-')} {getattr(self, name)!r}: use {wanted}")
        if self.auth_token is not None and len(self.auth_token) < 16:
            raise ValueError("auth-token: use at least 16 characters (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')")
        TrustedProxies(self.trusted_proxies)  # raises on a malformed list

    @property
    def token_rate(self) -> float:
        """Requests a second per bearer token: the option, else (with a token) :data:`TOKEN_RATE_FACTOR` clients' rate."""
        if self.token_rate_per_second is not None:
            return self.token_rate_per_second
        return TOKEN_RATE_FACTOR * self.rate_per_second if self.auth_token else 0.0

    def limits_client(self, address: str) -> bool:
        """Whether the per-client limits (rate, sessions) apply to a client at ``address``."""
        return self.rate_loopback or not is_loopback(address)


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


def override_entries(overrides: Any) -> int:
    """The list items a client's overrides hold, at every depth (surges, shift changes, profile periods,
    an empirical distribution's values): what building the scenario costs before any ticket runs."""
    count, stack = 0, [overrides]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            count += len(item)
            stack.extend(item)
    return count


def check_override_cost(overrides: Mapping[str, Any], limit: int) -> None:
    """Refuse, before anything is built, overrides with more than ``limit`` list entries in all."""
    entries = override_entries(overrides)
    if entries > limit:
        raise ClientError(
            f"reset: the overrides hold {entries:,} list entries (surges, shifts, profile periods, values); "
            f"this server builds at most {limit:,} per reset (csr-marl serve --max-override-entries)"
        )


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


class RequestGuard:
    """ASGI middleware: the bearer token on every request and handshake, the per-client rate limit
    (HTTP calls over it get 429 with ``Retry-After``; WebSocket messages over it wait their turn), and
    request bodies bounded."""

    def __init__(self, app: Any, limits: ServerLimits) -> None:
        self.app = app
        self.token = limits.auth_token.encode() if limits.auth_token else None
        self.max_body_bytes = limits.max_message_bytes
        self.rates = [
            (key, TokenBuckets(rate, limits.rate_burst)) for key, rate in
            (("address", limits.rate_per_second), ("token", limits.token_rate)) if rate > 0
        ]
        # Addresses not seen lately share one client's rate between them: a fresh address per request
        # (many addresses, one call each) gets no more of the server than one client.
        self.newcomers = TokenBuckets(limits.rate_per_second, limits.rate_burst) if limits.rate_per_second > 0 else None
        self.limits = limits

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if self.token is not None and not _bearer_matches(headers.get(b"authorization", b""), self.token):
            if kind == "websocket":  # closing before accepting rejects the handshake (HTTP 403)
                await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            else:
                await _reply(send, 401, "missing or wrong bearer token (send Authorization: Bearer TOKEN)",
                             [(b"www-authenticate", b"Bearer")])
            return
        keys = self._keys(scope, headers)
        cost = RESET_COST if scope.get("path") == "/reset" else 1
        newcomer = self._newcomer_wait(keys, cost)
        wait = newcomer if newcomer > NEWCOMER_WAIT_SECONDS else self._wait(keys, cost)
        if wait:
            if kind == "websocket":
                await self._too_many_ws(receive, send, wait)
            else:
                await self._too_many(send, wait)
            return
        if newcomer:
            await asyncio.sleep(newcomer)  # its place in the newcomers' queue
        if kind == "websocket" and keys:
            receive = self._paced(receive, keys)
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
            wait = self._wait(keys, len(body) // BYTES_PER_TOKEN)
            if wait:
                await self._too_many(send, wait)
                return
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def buffered() -> dict[str, Any]:
                return replay.pop() if replay else await receive()

            await self.app(scope, buffered, send)
            return
        await self.app(scope, receive, send)

    def _keys(self, scope: dict[str, Any], headers: dict[bytes, bytes]) -> list[tuple[TokenBuckets, str]]:
        client = scope.get("client")
        if client and not self.limits.limits_client(client[0]):
            return []  # a trainer on the server's own machine is its operator
        named = {"address": client_key(client[0]) if client else "unknown",
                 "token": headers.get(b"authorization", b"").decode("latin-1")}
        return [(buckets, named[key]) for key, buckets in self.rates]

    def _newcomer_wait(self, keys: list[tuple[TokenBuckets, str]], cost: int) -> float:
        """For a request from an address without a bucket yet: its wait in the newcomers' bucket (reserved
        if at most :data:`NEWCOMER_WAIT_SECONDS`); else 0.0."""
        if self.newcomers is None:
            return 0.0
        by_address = self.rates[0][1]  # with a newcomers' bucket, the first is the per-address one
        address = next((key for buckets, key in keys if buckets is by_address), None)
        if address is None or by_address.knows(address):
            return 0.0
        return self.newcomers.reserve(NEWCOMERS, cost, longest=NEWCOMER_WAIT_SECONDS)

    @staticmethod
    def _wait(keys: list[tuple[TokenBuckets, str]], cost: int = 1) -> float:
        if cost <= 0:
            return 0.0
        return max((buckets.take(key, cost=cost) for buckets, key in keys), default=0.0)

    def _over_rate(self, wait: float) -> tuple[int, str]:
        seconds = max(1, math.ceil(wait))
        return seconds, (f"rate limit: at most {self.rates[0][1].rate:g} requests a second per client (a reset counts "
                         f"{RESET_COST}); retry after {seconds} s")

    async def _too_many(self, send: Any, wait: float) -> None:
        seconds, detail = self._over_rate(wait)
        await _reply(send, 429, detail, [(b"retry-after", str(seconds).encode())])

    async def _too_many_ws(self, receive: Any, send: Any, wait: float) -> None:
        """A handshake over the rate: accepted, one error frame with the wait, then close 1013 (try again later)."""
        seconds, detail = self._over_rate(wait)
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        frame = {"type": "error", "data": {"message": detail, "code": "RATE_LIMITED", "retry_after_seconds": seconds}}
        await send({"type": "websocket.send", "text": json.dumps(frame)})
        await send({"type": "websocket.close", "code": 1013, "reason": f"rate limit: retry after {seconds} s"})

    def _paced(self, receive: Any, keys: list[tuple[TokenBuckets, str]]) -> Any:
        """``receive`` for a WebSocket: each client message past the rate waits for its token."""

        async def paced() -> dict[str, Any]:
            message = await receive()
            if message.get("type") == "websocket.receive":
                text = message.get("text") or message.get("bytes") or ""
                reset = '"reset"' in text[:200] if isinstance(text, str) else False  # {"type": "reset", ...}
                cost = (RESET_COST if reset else 1) + len(text) // BYTES_PER_TOKEN
                while (wait := self._wait(keys, cost)) > 0:
                    await asyncio.sleep(wait)
            return message

        return paced


def _bearer_matches(given: bytes, token: bytes) -> bool:
    """``Authorization: Bearer TOKEN``, the scheme in any case (HTTP auth schemes are case-insensitive)."""
    scheme, _, credentials = given.strip().partition(b" ")
    return hmac.compare_digest(scheme.lower() + b" " + credentials.strip(), b"bearer " + token)


async def _reply(send: Any, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
