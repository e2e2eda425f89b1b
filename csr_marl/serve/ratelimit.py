"""Token buckets per client: a steady rate of requests with a burst, and how long to wait past them.

    buckets = TokenBuckets(rate=20.0, burst=40)
    wait = buckets.take("203.0.113.7")   # 0.0: go ahead; else seconds until the next token

A client's bucket holds at most ``burst`` tokens and refills at ``rate`` a second; each request (an
HTTP call, a WebSocket message) takes one, or its ``cost`` (a reset builds a day, a large frame takes
long to read: they cost more). A cost over the burst goes through when the bucket is full and leaves
it in debt, so the client's next request waits until the whole cost is paid. Buckets of clients not
seen lately are dropped, so a flood of addresses costs bounded memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

MAX_CLIENTS = 10_000  # buckets kept; the least recently seen client's goes first


class TokenBuckets:
    """One token bucket per key (a client address, a token), thread-safe."""

    def __init__(self, rate: float, burst: int, max_clients: int = MAX_CLIENTS) -> None:
        if not rate > 0 or burst < 1:
            raise ValueError(f"a rate limit needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate, self.burst, self.max_clients = float(rate), int(burst), max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None, cost: float = 1.0) -> float:
        """Take ``cost`` tokens for ``key``: 0.0 if it had them, else the seconds until it has (none taken)."""
        now = time.monotonic() if now is None else now
        need = min(float(cost), float(self.burst))  # a cost over the burst goes through from a full bucket...
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            wait = 0.0 if tokens >= need else (need - tokens) / self.rate
            self._buckets[key] = (tokens - cost if wait == 0.0 else tokens, now)  # ...and is paid in full: a debt
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
            return wait

    def knows(self, key: str) -> bool:
        """Whether ``key`` has a bucket: it was seen lately (among the last ``max_clients``)."""
        with self._lock:
            return key in self._buckets

    def reserve(self, key: str, cost: float = 1.0, longest: float = 0.0, now: float | None = None) -> float:
        """Take ``cost`` tokens, into debt if the wait that leaves is at most ``longest`` seconds, and
        return that wait (0.0: go ahead; else sleep it, the tokens are yours). Past ``longest``, nothing
        is taken and the wait is returned. Waiters queue in turn: each reservation waits for the last."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            wait = max(0.0, (cost - tokens) / self.rate)
            self._buckets[key] = (tokens - cost if wait <= longest else tokens, now)
            return wait
