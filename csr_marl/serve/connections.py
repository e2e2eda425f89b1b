"""Connection hygiene for uvicorn: a deadline on reading each request, a cap on connections per client
address, and logs that say a condition once instead of a traceback per socket.

- :class:`GuardedH11Protocol`: uvicorn's h11 protocol, plus: a request (its headers and body) must
  arrive within ``request_read_seconds`` of the connection opening or of the previous response, else
  the connection is closed (a half-sent request holds a socket for seconds, not forever); and an
  address with ``max_connections_per_client`` open connections gets a new one only by giving up its
  oldest connection that has not sent a whole request (else the new one is closed at once), and then
  none for :data:`GIVE_WAY_SECONDS`. A connection the cap refuses is turned away by the listening
  socket as it is accepted (:mod:`.listener`), before the event loop gives it a transport, a task or a
  protocol: it is held unread for as long as a request may take to arrive (``request_read_seconds``)
  and then closed (at most :data:`MAX_HELD_REFUSED` held in all; past that, closed at once), so a
  slowloris that reopens what is closed reopens about a tenth of its socket count a second.
  The cap counts the socket's own peer address (every address, loopback ones included: only the
  rate limit exempts clients on this machine; an IPv6 address by its /64), not ``X-Forwarded-For``,
  except a trusted proxy's: its connections carry many clients (the proxy caps each one's, and the
  session cap counts each forwarded client). A connection that becomes a WebSocket still counts until
  it closes, unless it comes from this machine (the operator's trainer, which the session caps exempt
  too, unless ``--rate-loopback``).
- :class:`OncePerInterval`: a logging filter that lets one record per message through per interval,
  without its traceback, counting what it held back ("Too many open files" under a flood).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict, deque
from typing import ClassVar, Protocol

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import get_remote_addr

from .clients import TrustedProxies, client_key, is_loopback

log = logging.getLogger("csr_marl.serve")
SILENT_GRACE_SECONDS = 2.0  # a new connection that has sent nothing yet is not evicted before this
GIVE_WAY_SECONDS = 0.2  # after an address at its cap gives up a stalled connection, it gives up no other for this long
MAX_HELD_REFUSED = 4_096  # refused connections held at once (one open file each); past this, closed at once
PENDING_SECONDS = 5.0  # an accepted connection's place is kept this long for its protocol to claim
SWEEP_SECONDS = 10.0  # how often closed WebSockets are dropped from every address's count


class Closable(Protocol):
    def close(self) -> None: ...


class Pending:
    """The place of a connection just accepted, until its protocol claims it (at most :data:`PENDING_SECONDS`)."""

    heard = False

    def __init__(self) -> None:
        self.opened = time.monotonic()
        self.transport = self

    def is_closing(self) -> bool:
        return time.monotonic() - self.opened > PENDING_SECONDS

    def reading_request(self) -> bool:
        return False  # never given up as stalled: it has not been set up yet


class ConnectionBook:
    """Open connections per client address, oldest first (one book per server)."""

    def __init__(self, per_client: int, hold_seconds: float = 10.0) -> None:
        self.per_client = per_client
        self.hold_seconds = hold_seconds  # a refused connection is held this long, unread, before it is closed
        self.swept = time.monotonic()
        self.open: dict[str, list["GuardedH11Protocol | Pending"]] = defaultdict(list)
        self.gave_way: dict[str, float] = {}  # when each address at its cap last gave up a stalled connection
        self.held: deque[tuple[float, Closable]] = deque()  # refused connections, to close when due
        self._sweep: asyncio.TimerHandle | None = None

    def admit(self, protocol: "GuardedH11Protocol | Pending", address: str) -> bool:
        """Record ``protocol``; past the cap, close the address's oldest stalled request, or refuse.

        The listening socket (:mod:`.listener`) asks as it accepts, with a :class:`Pending` place that
        the connection's protocol then takes (:meth:`claim`); a refused socket never gets a transport.

        Stalled: part of a request came and the rest did not, or nothing came for
        :data:`SILENT_GRACE_SECONDS`. A connection that has just opened is given that long to speak.
        An address that gave one up less than :data:`GIVE_WAY_SECONDS` ago is refused at once: a
        flood from one address churns at most one of its stalled connections per interval, and every
        other new connection from it costs a dictionary look-up.
        """
        if not self.per_client:
            return True  # no cap: nothing to count
        now = time.monotonic()
        if now - self.swept > SWEEP_SECONDS:
            self._sweep_closed(now)
        mine = self.open[address]
        if len(mine) >= self.per_client and now - self.gave_way.get(address, -GIVE_WAY_SECONDS) < GIVE_WAY_SECONDS:
            return False
        mine[:] = [p for p in mine if not p.transport.is_closing()]
        if len(mine) >= self.per_client:
            stalled = next((p for p in mine if p.reading_request() and (p.heard or now - p.opened > SILENT_GRACE_SECONDS)), None)
            if stalled is None:
                return False
            stalled.close("the address's connection cap")
            mine.remove(stalled)
            self.gave_way[address] = now
        mine.append(protocol)
        return True

    def _sweep_closed(self, now: float) -> None:
        """Drop closed connections (WebSockets are counted until they close, and tell nobody) everywhere."""
        self.swept = now
        for address in list(self.open):
            alive = [p for p in self.open[address] if not p.transport.is_closing()]
            if alive:
                self.open[address] = alive
            else:
                del self.open[address]
                self.gave_way.pop(address, None)

    def claim(self, protocol: "GuardedH11Protocol", address: str) -> bool:
        """Put ``protocol`` in the place the listener kept for it; False if none was kept."""
        mine = self.open.get(address, [])
        for index, held in enumerate(mine):
            if isinstance(held, Pending):
                mine[index] = protocol
                return True
        return False

    def refuse(self, connection: "Closable", loop: asyncio.AbstractEventLoop) -> None:
        """Close a connection the cap refused (a socket, a paused transport): unread, after
        ``hold_seconds``, or at once if :data:`MAX_HELD_REFUSED` already wait."""
        if len(self.held) >= MAX_HELD_REFUSED:
            connection.close()
            return
        self.held.append((time.monotonic() + self.hold_seconds, connection))
        if self._sweep is None:
            self._sweep = loop.call_later(self.hold_seconds, self._close_due, loop)

    def _close_due(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        now = time.monotonic()
        while self.held and self.held[0][0] <= now:
            self.held.popleft()[1].close()
        if self.held:
            self._sweep = loop.call_later(self.held[0][0] - now, self._close_due, loop)

    def forget(self, protocol: "GuardedH11Protocol", address: str) -> None:
        mine = self.open.get(address)
        if mine is not None:
            if protocol in mine:
                mine.remove(protocol)
            if not mine:
                del self.open[address]
                self.gave_way.pop(address, None)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-read deadline and a per-address connection cap.

    Configured by :func:`guarded_protocol`, which makes a subclass holding the settings and the book.
    """

    request_read_seconds: ClassVar[float] = 10.0
    book: ClassVar[ConnectionBook] = ConnectionBook(0)
    proxies: ClassVar[TrustedProxies] = TrustedProxies("")
    count_local: ClassVar[bool] = False  # whether this machine's WebSockets count too (--rate-loopback)
    _deadline: asyncio.TimerHandle | None = None
    _address: str | None = None
    heard = False  # part of the current request has come
    opened = 0.0
    refused = False  # closed by the cap as it opened: uvicorn never saw it
    upgraded = False  # it became a WebSocket: never a stalled request

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.opened = time.monotonic()
        peer = get_remote_addr(transport)
        # a trusted proxy speaks for many clients: it is not capped (the proxy caps each client's connections)
        address = client_key(peer[0]) if peer and not self.proxies.trusts(peer[0]) else None
        if address is not None and not self.book.claim(self, address) and not self.book.admit(self, address):
            self.refused = True  # before uvicorn's setup: no flow control, no entry in its connections, no timer
            transport.pause_reading()  # nothing it sends is read or parsed
            self.book.refuse(transport, self.loop)
            note("closed new connections past the per-address connection cap")
            return
        super().connection_made(transport)
        self._address = address
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            return
        self._disarm()
        if self._address is not None:
            self.book.forget(self, self._address)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.heard = True
        super().data_received(data)
        if not self.reading_request():
            self._disarm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()  # the WebSocket protocol takes over, with its own ping and idle timeouts
        self.upgraded = True
        peer = get_remote_addr(self.transport)
        if self._address is not None and not self.count_local and is_loopback(peer[0] if peer else ""):
            self.book.forget(self, self._address)  # this machine's WebSockets are the operator's
            self._address = None
        super().handle_websocket_upgrade(event)  # else it stays in the book (never as stalled) until it closes

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.heard, self.opened = False, time.monotonic()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has its own deadline

    def reading_request(self) -> bool:
        """Whether the connection is still waiting for a request's headers or body."""
        return not self.upgraded and self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

    def close(self, why: str) -> None:
        note(f"closed connections that had not sent a whole request ({why})")
        self._disarm()
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_read_seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.reading_request() and not self.transport.is_closing():
            self.close(f"no whole request within {self.request_read_seconds:g} s")


def guarded_protocol(request_read_seconds: float, max_connections_per_client: int,
                     proxies: TrustedProxies | None = None, count_local: bool = False) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` subclass with these settings and a fresh connection book."""
    return type("ServerH11Protocol", (GuardedH11Protocol,), {
        "request_read_seconds": request_read_seconds, "book": ConnectionBook(max_connections_per_client, request_read_seconds),
        "proxies": proxies or TrustedProxies(""), "count_local": count_local,
    })


class OncePerInterval(logging.Filter):
    """Let through one record per message per ``seconds``, traceback dropped, with a count of the rest."""

    def __init__(self, seconds: float = 10.0) -> None:
        super().__init__()
        self.seconds = seconds
        self._seen: dict[str, tuple[float, int]] = {}

    def held_back(self, key: str, now: float) -> bool:
        """Whether a record under ``key`` falls within its interval (then it is counted, not let through)."""
        last, held = self._seen.get(key, (-float("inf"), 0))
        if now - last < self.seconds:
            self._seen[key] = (last, held + 1)
            return True
        return False

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.msg}"
        now = time.monotonic()
        if self.held_back(key, now):
            return False
        last, held = self._seen.get(key, (-float("inf"), 0))
        if len(self._seen) > 1_000:
            self._seen.clear()
        self._seen[key] = (now, 0)
        reason = f": {record.exc_info[1]}" if record.exc_info and record.exc_info[1] is not None else ""
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if reason or held:
            record.msg = f"{record.getMessage()}{reason}" + (f" ({held} more like it in the last {self.seconds:g} s)" if held else "")
            record.args = ()
        return True


_notes = OncePerInterval()


def note(message: str) -> None:
    """Log a connection condition at warning level, at most once per interval."""
    if _notes.held_back(f"{log.name}:{message}", time.monotonic()):
        return  # counted without building a record: this runs once per refused socket in a flood
    record = log.makeRecord(log.name, logging.WARNING, __file__, 0, message, (), None)
    if _notes.filter(record):
        log.handle(record)


def quiet_floods(seconds: float = 10.0) -> None:
    """Rate-limit the loggers a socket flood fills: asyncio's accept errors and uvicorn's per-request warnings."""
    for name in ("asyncio", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, OncePerInterval) for f in logger.filters):
            logger.addFilter(OncePerInterval(seconds))


def raise_open_file_limit() -> None:
    """Lift this process's soft limit on open files to the hard one (more sockets before EMFILE)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # pragma: no cover - a hard limit the kernel will not grant
            pass

