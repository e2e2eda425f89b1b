"""Sessions per server and per client, and the server's work shared fairly between clients.

- :class:`SessionBook`: WebSocket sessions (one place each while connected) and running HTTP
  ``/reset`` / ``/step`` calls share the server's cap, and each client (:func:`~.clients.client_key`)
  holds at most ``per_client`` of them. When the server is full, the session that has gone longest
  without a ``reset`` or ``step`` -- if that is at least ``reclaim_after`` seconds -- is closed to make
  room, so silent sessions never keep a working client out.
- :class:`FairGate`: the server's simulation work, shared between clients. At most ``slots`` calls
  run at once; a waiting call goes ahead of those of clients that used more of the server lately
  (busy seconds, halving every :data:`USAGE_HALF_LIFE_SECONDS`, counting the call's own expected
  length: a short call of a client goes ahead of a long one of a client as busy). A call that runs past
  :data:`HAND_OFF_SECONDS` gives its place to the next one and goes on beside it (long calls already
  take turns in :mod:`csr_marl.sim.work`), so nobody waits behind a long call.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

USAGE_HALF_LIFE_SECONDS = 2.0
HAND_OFF_SECONDS = 0.02
GATE_SLOTS = 2
DEFAULT_CALL_SECONDS = 0.002  # what a client's call is expected to take before it has made one


@dataclass(eq=False)
class Lease:
    """One place on the server: a WebSocket session, or one HTTP call while it runs."""

    client: str
    reclaim: Callable[[], None] | None = None  # closes a WebSocket session; None: an HTTP call, never reclaimed
    worked_at: float = field(default_factory=time.monotonic)  # the last reset or step (or the opening)
    busy: bool = False  # a call is running

    def worked(self) -> None:
        """A reset or step came: the session is in use."""
        self.worked_at = time.monotonic()


class SessionBook:
    """The server's places and each client's share of them (used from the event loop's thread)."""

    def __init__(self, capacity: int, per_client: int, reclaim_after: float) -> None:
        self.capacity, self.per_client, self.reclaim_after = capacity, per_client, reclaim_after
        self.leases: set[Lease] = set()
        self.held: defaultdict[str, int] = defaultdict(int)

    @property
    def taken(self) -> int:
        return len(self.leases)

    def open(self, client: str, reclaim: Callable[[], None] | None = None, exempt: bool = False) -> Lease | str:
        """A place for ``client``, or the one-line reason there is none. ``exempt``: no per-client cap."""
        if not exempt and self.held[client] >= self.per_client:
            return (f"this client already holds {self.per_client} sessions, the most one client may "
                    "(close one first; sessions and running HTTP calls both count)")
        if len(self.leases) >= self.capacity and not self._reclaim_one():
            return f"the server is at capacity ({self.capacity} sessions); try again later"
        lease = Lease(client, reclaim)
        self.leases.add(lease)
        self.held[client] += 1
        return lease

    def close(self, lease: Lease) -> None:
        if lease in self.leases:
            self.leases.remove(lease)
            self.held[lease.client] -= 1
            if self.held[lease.client] <= 0:
                del self.held[lease.client]

    def _reclaim_one(self) -> bool:
        """Close the session longest without work, if it has none for ``reclaim_after`` s; whether one was."""
        now = time.monotonic()
        idle = [lease for lease in self.leases if lease.reclaim is not None and not lease.busy
                and now - lease.worked_at >= self.reclaim_after]
        if not idle:
            return False
        victim = min(idle, key=lambda lease: lease.worked_at)
        self.close(victim)
        victim.reclaim()
        return True


class FairGate:
    """Simulation calls in turn, the least busy client's first (used from the event loop's thread)."""

    def __init__(self, slots: int = GATE_SLOTS, half_life: float = USAGE_HALF_LIFE_SECONDS,
                 hand_off: float = HAND_OFF_SECONDS) -> None:
        self.free, self.half_life, self.hand_off = slots, half_life, hand_off
        self._usage: dict[str, tuple[float, float]] = {}  # client -> (busy seconds, decayed to this time)
        self._typical: dict[str, float] = {}  # client -> how long its calls take (a moving average)
        self._last_rank: dict[tuple[str, float], float] = {}  # (client, weight) -> the rank of its last call to wait
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def usage(self, client: str, now: float | None = None) -> float:
        """``client``'s recent busy seconds, each second worth half as much every ``half_life``."""
        now = time.monotonic() if now is None else now
        busy, at = self._usage.get(client, (0.0, now))
        return busy * math.exp2(-(now - at) / self.half_life)

    def _rank(self, client: str, now: float) -> float:
        """Where ``client``'s next call waits: its usage once this call is charged (its recent busy seconds
        plus what its calls usually take), on one scale for all times (log2, as if decayed from a fixed
        origin). Calls of less busy clients, and short calls, go first; a client's own calls keep their order."""
        busy, at = self._usage.get(client, (0.0, now))
        used = math.log2(busy) + at / self.half_life if busy > 0 else -math.inf
        upcoming = math.log2(self._typical.get(client, DEFAULT_CALL_SECONDS)) + now / self.half_life
        high, low = max(used, upcoming), min(used, upcoming)
        return high + math.log2(1.0 + math.exp2(low - high))

    async def run(self, client: str, call: Callable[[], asyncio.Future], weight: float = 1.0) -> object:  # type: ignore[type-arg]
        """Wait for a turn, start ``call()`` (a future: the call running in its thread), await it.

        ``weight``: how much busier than it is its client counts while this call waits (a reset, which
        builds a whole day, weighs :data:`~.guard.RESET_COST`, as in the rate limit: turns of days
        under way go before new days, and a client that only resets gets a tenth of a stepper's share)."""
        if self.free > 0 and not self._waiting:
            self.free -= 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            now = time.monotonic()
            rank = max(self._rank(client, now) + math.log2(weight), self._last_rank.get((client, weight), -math.inf))
            self._last_rank[(client, weight)] = rank
            heapq.heappush(self._waiting, (rank, next(self._order), turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._give_back()  # it was handed the place as it was cancelled
                raise
        started = time.monotonic()
        holding = [True]

        def hand_off() -> None:
            if holding[0]:
                holding[0] = False
                self._give_back()

        timer = asyncio.get_running_loop().call_later(self.hand_off, hand_off)
        try:
            return await call()
        finally:
            timer.cancel()
            hand_off()
            self._charge(client, time.monotonic() - started)

    def _give_back(self) -> None:
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1

    def _charge(self, client: str, seconds: float) -> None:
        now = time.monotonic()
        self._usage[client] = (self.usage(client, now) + seconds, now)
        typical = self._typical.get(client, DEFAULT_CALL_SECONDS)
        self._typical[client] = typical + 0.25 * (seconds - typical)
        if len(self._usage) > 10_000:  # forget those whose use has decayed away
            self._usage = {key: value for key, value in self._usage.items() if self.usage(key, now) > 1e-4}
            self._typical = {key: value for key, value in self._typical.items() if key in self._usage}
            self._last_rank = {key: value for key, value in self._last_rank.items() if key[0] in self._usage}
