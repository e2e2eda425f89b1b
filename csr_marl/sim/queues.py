"""Ticket queues with priority lanes and lazy abandonment.

A queue keeps one FIFO lane per priority (assigned priority, urgent first), so the first K visible tickets
are found in O(K) whatever the queue length. A customer whose patience runs out is removed lazily: the
queue keeps a heap of deadlines and purges expired tickets (stamped with their true abandonment time)
whenever anybody looks at it, which gives exact statistics without one event per ticket. A ticket taken
for service leaves a stale heap entry behind; once stale entries outnumber live ones the heap is rebuilt
from the live ones, so memory stays proportional to the tickets waiting, whatever the patience.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Final

from ..config.domain import PRIORITIES
from .tickets import Ticket

_LANE: Final = {p: len(PRIORITIES) - 1 - i for i, p in enumerate(PRIORITIES)}  # urgent -> lane 0


class TicketQueue:
    """Waiting tickets of one queue (triage inbox, resolver queue, escalation queue)."""

    def __init__(self, name: str, by_priority: bool = True) -> None:
        self.name = name
        self.by_priority = by_priority
        self.lanes: list[deque[Ticket]] = [deque() for _ in PRIORITIES] if by_priority else [deque()]
        self.size = 0
        self._deadlines: list[tuple[float, int, Ticket]] = []
        self._timed = 0  # waiting tickets with a finite deadline (live heap entries)
        self._seq = 0

    def __len__(self) -> int:
        return self.size

    def push(self, ticket: Ticket, now: float) -> None:
        ticket.waiting_in = self.name
        ticket.enqueued_at = now
        lane = self.lanes[_LANE[ticket.assigned_priority]] if self.by_priority else self.lanes[0]
        lane.append(ticket)
        self.size += 1
        if ticket.patience_left != math.inf:
            ticket.deadline = now + ticket.patience_left
            self._seq += 1
            self._timed += 1
            heapq.heappush(self._deadlines, (ticket.deadline, self._seq, ticket))

    def expired(self, now: float) -> list[Ticket]:
        """Remove and return tickets whose deadline is at or before ``now`` (earliest first)."""
        heap = self._deadlines
        if not heap or heap[0][0] > now:
            return []
        gone: list[Ticket] = []
        while heap and heap[0][0] <= now:
            deadline, _, ticket = heapq.heappop(heap)
            if ticket.waiting_in is self.name and ticket.deadline == deadline:
                ticket.waiting_in = None
                self.size -= 1
                self._timed -= 1
                gone.append(ticket)
        return gone

    def next_deadline(self) -> float:
        """Earliest pending abandonment time (may be stale; used only as a lower bound)."""
        return self._deadlines[0][0] if self._deadlines else math.inf

    def visible(self, k: int) -> list[Ticket]:
        """The first ``k`` waiting tickets in service order (priority lane, then arrival)."""
        out: list[Ticket] = []
        name = self.name
        for lane in self.lanes:
            while lane and lane[0].waiting_in is not name:
                lane.popleft()
            for ticket in lane:
                if ticket.waiting_in is name:
                    out.append(ticket)
                    if len(out) == k:
                        return out
        return out

    def head(self) -> Ticket | None:
        tickets = self.visible(1)
        return tickets[0] if tickets else None

    def take(self, ticket: Ticket, now: float) -> float:
        """Remove ``ticket`` for service; returns how long it waited in this queue."""
        if ticket.waiting_in is not self.name:
            raise ValueError(f"{ticket!r} is not waiting in the {self.name} queue")
        lane = self.lanes[_LANE[ticket.assigned_priority]] if self.by_priority else self.lanes[0]
        if lane[0] is ticket:
            lane.popleft()
        else:
            lane.remove(ticket)
        ticket.waiting_in = None
        self.size -= 1
        if ticket.patience_left != math.inf:
            self._timed -= 1
            if len(self._deadlines) > 2 * self._timed + 64:
                self._compact()
        waited = now - ticket.enqueued_at
        if not waited > 0.0:
            waited = 0.0  # no negative residue of float sums
        ticket.patience_left -= waited
        return waited

    def _compact(self) -> None:
        """Drop the entries of tickets no longer waiting here (amortised O(1) per take)."""
        live = [e for e in self._deadlines if e[2].waiting_in is self.name and e[2].deadline == e[0]]
        heapq.heapify(live)
        self._deadlines = live

    def __iter__(self):
        for lane in self.lanes:
            for ticket in lane:
                if ticket.waiting_in is self.name:
                    yield ticket
