"""A bound on how much simulation one request may run: tickets, wall time, and a way to stop it.

A server runs other people's requests on its own cores. Inside :func:`work_limit`, every ticket the
core creates in the calling thread is counted, and the core stops with :class:`WorkLimitReached` as
soon as the request has simulated more than ``max_tickets`` tickets, run longer than ``max_seconds``,
or one of ``stop_events`` is set (the client went away, the server is shutting down)::

    with work_limit(max_tickets=5_000, max_seconds=10.0, stop_events=(disconnected,)):
        session.reset(seed=0)

Outside a ``work_limit`` (a study, a training run) nothing is counted. The limit is per thread, so
sessions served from different threads have their own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

_local = threading.local()


class WorkLimitReached(RuntimeError):
    """The request ran out of its work budget, or was stopped; the message says which, in one line."""


@dataclass
class _Meter:
    max_tickets: int
    deadline: float
    max_seconds: float
    stop_events: Sequence[threading.Event]
    tickets: int = field(default=0)

    def charge(self, tickets: int) -> None:
        self.tickets += tickets
        if self.tickets > self.max_tickets:
            raise WorkLimitReached(f"the request simulated more than {self.max_tickets} tickets, its work budget")
        self.check()

    def check(self) -> None:
        for event in self.stop_events:
            if event.is_set():
                raise WorkLimitReached("the request was stopped (the client left or the server is stopping)")
        if time.monotonic() > self.deadline:
            raise WorkLimitReached(f"the request ran longer than {self.max_seconds:g} s, its work budget")


@contextmanager
def work_limit(
    max_tickets: int, max_seconds: float, stop_events: Sequence[threading.Event] = ()
) -> Iterator[None]:
    """Count the tickets simulated in this thread and stop the core past either bound (see module doc)."""
    if max_tickets < 1 or not max_seconds > 0:
        raise ValueError(f"a work limit needs max_tickets >= 1 and max_seconds > 0, got {max_tickets}, {max_seconds}")
    outer = getattr(_local, "meter", None)
    meter = _Meter(max_tickets, time.monotonic() + max_seconds, max_seconds, tuple(stop_events))
    meter.check()
    _local.meter = meter
    try:
        yield
    finally:
        _local.meter = outer


def charge_ticket() -> None:
    """The core created a ticket: count it against the running request's limit, if there is one."""
    meter = getattr(_local, "meter", None)
    if meter is not None:
        meter.charge(1)


def check_work() -> None:
    """Raise :class:`WorkLimitReached` if the running request is past its time or was stopped."""
    meter = getattr(_local, "meter", None)
    if meter is not None:
        meter.check()
