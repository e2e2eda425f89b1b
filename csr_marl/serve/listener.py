"""Listening sockets that turn away, as they accept them, connections past their address's cap.

    book = ConnectionBook(per_client=32)
    sockets = listening_sockets("127.0.0.1", 8000, book, TrustedProxies("127.0.0.1"))
    # uvicorn.Server(config).run(sockets=sockets)

The event loop accepts connections in rounds and gives each a transport, a task and a protocol before
any code of the server sees it; a slowloris that reopens every socket the server closes makes that a
few hundred microseconds of the loop's time per socket, a second of CPU for every few thousand sockets.
:class:`GuardedListener` asks the :class:`~.connections.ConnectionBook` at ``accept``: a connection its
address may not open is held, unread, by the book and closed later, and the loop never learns of it.
An admitted one keeps its place in the book (a :class:`~.connections.Pending`) until its protocol
claims it.
"""

from __future__ import annotations

import asyncio
import socket

from .clients import TrustedProxies, client_key
from .connections import ConnectionBook, Pending, note


class GuardedListener(socket.socket):
    """A listening socket whose ``accept`` returns only the connections the book admits."""

    def __init__(self, bound: socket.socket, book: ConnectionBook, proxies: TrustedProxies) -> None:
        super().__init__(bound.family, bound.type, bound.proto, fileno=bound.detach())
        self.book, self.proxies = book, proxies
        self.refused = 0  # connections turned away at accept, in all

    def accept(self) -> tuple[socket.socket, object]:
        """The next admitted connection; ``BlockingIOError`` when none waits (the loop's round ends)."""
        while True:
            connection, address = super().accept()
            if self.admits(address):
                return connection, address
            self.refused += 1
            self.book.refuse(connection, asyncio.get_running_loop())
            note("closed new connections past the per-address connection cap")

    def admits(self, address: object) -> bool:
        """Whether a connection from ``address`` (the peer) may open; an admitted one is booked."""
        if not self.book.per_client or not isinstance(address, tuple):
            return True  # no cap, or a Unix socket: nothing to count
        peer = str(address[0])
        # a trusted proxy speaks for many clients: it is not capped (the proxy caps each client's connections)
        return self.proxies.trusts(peer) or self.book.admit(Pending(), client_key(peer))


def listening_sockets(host: str | None, port: int, book: ConnectionBook, proxies: TrustedProxies) -> list[GuardedListener]:
    """Bound (not yet listening) sockets for ``host``:``port``, one per address it resolves to, as the
    event loop's own ``create_server`` would bind them. Raises ``OSError`` if one cannot be bound."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    bound: list[GuardedListener] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            bound.append(GuardedListener(sock, book, proxies))
            bound[-1].setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # one socket per family, as create_server binds them
                bound[-1].setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            bound[-1].bind(address)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound

