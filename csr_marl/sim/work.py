"""A bound on how much simulation one request may run: tickets, wall time, and a way to stop it.

A server runs other people's requests on its own cores. Inside :func:`work_limit`, every ticket the
core creates in the calling thread is counted, and the core stops with :class:`WorkLimitReached` as
soon as the request has simulated more than ``max_tickets`` tickets, run longer than ``max_seconds``,
or one of ``stop_events`` is set (the client went away, the server is shutting down)::

    with work_limit(max_tickets=5_000, max_seconds=10.0, stop_events=(disconnected,)):
        session.reset(seed=0)

Outside a ``work_limit`` (a study, a training run) nothing is counted. The limit is per thread, so
sessions served from different threads have their own.

Long requests yield to short ones. A request that has simulated :data:`HEAVY_AFTER_TICKETS` tickets
is *heavy*: heavy requests take turns (one at a time, process-wide, in the order they asked), each
turn works for :data:`HEAVY_SLICE_SECONDS`, and no turn starts within :data:`HEAVY_PAUSE_SECONDS` of
the last one's end, so all heavy work together gets at most a fifteenth of the interpreter, however
many requests run away at once. A client's ordinary step (a few tickets) is never heavy, and keeps its
latency while runaway requests run out their budget.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

_local = threading.local()

HEAVY_AFTER_TICKETS = 50
HEAVY_SLICE_SECONDS = 0.002
HEAVY_PAUSE_SECONDS = 0.028
_next_turn_at = 0.0  # when the next heavy turn may start (written only by the turn's holder)
# Work limits open in any thread (guarded by _OPEN_LOCK): while none is, counting a ticket is one test
# of this number, not a thread-local lookup (the core's hot path outside a server).
_open_limits = 0
_OPEN_LOCK = threading.Lock()


class _Turns:
    """Heavy requests' turns, first come first served. A plain lock is not fair: the request that just
    released it takes it straight back before a waiting thread wakes, and a second runaway request can
    wait out its whole budget without one turn."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._queue: deque[_Meter] = deque()  # waiting requests, oldest first
        self._held = False

    def take(self, meter: _Meter) -> None:
        """Wait for this request's turn; waiting counts against its budget and ends on a stop event."""
        with self._changed:
            self._queue.append(meter)
            try:
                while self._held or self._queue[0] is not meter:
                    self._changed.wait(timeout=0.05)
                    meter.check()
            except BaseException:
                self._queue.remove(meter)
                self._changed.notify_all()
                raise
            self._queue.popleft()
            self._held = True

    def give_back(self) -> None:
        with self._changed:
            self._held = False
            self._changed.notify_all()


class WorkLimitReached(RuntimeError):
    """The request ran out of its work budget, or was stopped; the message says which, in one line."""


@dataclass
class _Meter:
    max_tickets: int
    deadline: float
    max_seconds: float
    stop_events: Sequence[threading.Event]
    started: float = field(default_factory=time.monotonic)
    tickets: int = 0
    heavy: bool = False  # holds the heavy turn
    turn_start: float = 0.0
    slice_end: float = 0.0

    def charge(self, tickets: int) -> None:
        self.tickets += tickets
        if self.tickets > self.max_tickets:
            raise WorkLimitReached(f"the request simulated more than {self.max_tickets} tickets, its work budget")
        self.check()
        if self.tickets < HEAVY_AFTER_TICKETS:
            return
        if not self.heavy:
            self._take_turn()
        elif time.monotonic() >= self.slice_end:
            self.release()
            self._take_turn()

    def build(self, units: int) -> None:
        """The request is about to build ``units`` entries (surges, shift changes) in one piece: a large
        build is heavy work from its start, and waits for its turn like a long simulation."""
        if units >= HEAVY_AFTER_TICKETS:
            self.check()
            if not self.heavy:
                self._take_turn()

    def _take_turn(self) -> None:
        _TURNS.take(self)
        self.heavy = True
        wait = _next_turn_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # holding the turn: heavy work as a whole stays at a fifteenth of the time
        self.turn_start = time.monotonic()
        self.slice_end = self.turn_start + HEAVY_SLICE_SECONDS

    def release(self) -> None:
        """End this request's heavy turn, if it holds one. The pause before the next turn grows with
        this one's length (a build that ran 30 ms in one piece waits 14 times that), so heavy work stays
        a fifteenth of the time however long its pieces."""
        global _next_turn_at
        if self.heavy:
            now = time.monotonic()
            ratio = HEAVY_PAUSE_SECONDS / HEAVY_SLICE_SECONDS
            _next_turn_at = now + max(HEAVY_PAUSE_SECONDS, ratio * (now - self.turn_start))
            self.heavy = False
            _TURNS.give_back()

    def check(self) -> None:
        for event in self.stop_events:
            if event.is_set():
                raise WorkLimitReached("the request was stopped (the client left or the server is stopping)")
        if time.monotonic() > self.deadline:
            raise WorkLimitReached(f"the request ran longer than {self.max_seconds:g} s, its work budget")


_TURNS = _Turns()


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
    _count_open(1)
    try:
        yield
    finally:
        _count_open(-1)
        meter.release()
        _local.meter = outer


def _count_open(change: int) -> None:
    global _open_limits
    with _OPEN_LOCK:
        _open_limits += change


def charge_ticket() -> None:
    """The core created a ticket: count it against the running request's limit, if there is one."""
    if not _open_limits:
        return
    meter = getattr(_local, "meter", None)
    if meter is not None:
        meter.charge(1)


def charge_build(units: int) -> None:
    """The request is about to build ``units`` entries in one piece (see :meth:`_Meter.build`)."""
    meter = getattr(_local, "meter", None)
    if meter is not None:
        meter.build(units)


def check_work() -> None:
    """Raise :class:`WorkLimitReached` if the running request is past its time or was stopped."""
    meter = getattr(_local, "meter", None)
    if meter is not None:
        meter.check()
