"""The work budget of a request: tickets and seconds counted in the core, a stop event obeyed, nothing
counted outside one, and long requests yielding to short ones."""

from __future__ import annotations

import threading
import time

import pytest

import csr_marl
from csr_marl.sim import work
from csr_marl.sim.work import WorkLimitReached, work_limit
from csr_marl.text import TextSession

RUNAWAY = {"staffing.resolver": 0, "arrivals": {"rate_per_hour": 10000}, "horizon_minutes": 10000}


def test_a_runaway_reset_stops_at_its_ticket_budget() -> None:
    session = TextSession("standard_day", seed=0, roles=("resolver",), overrides=RUNAWAY)
    with pytest.raises(WorkLimitReached, match="more than 300 tickets"), work_limit(300, 60.0):
        session.reset(seed=0)
    # The same reset ends normally once the client plays a role that is staffed.
    normal = TextSession("standard_day", seed=0, roles=("triage",))
    with work_limit(300, 60.0):
        assert normal.reset(seed=0) is not None


def test_a_stop_event_ends_the_request() -> None:
    session = TextSession("standard_day", seed=0, roles=("resolver",), overrides=RUNAWAY)
    left = threading.Event()
    threading.Timer(0.3, left.set).start()
    with pytest.raises(WorkLimitReached, match="stopped"), work_limit(10**7, 120.0, (left,)):
        session.reset(seed=0)


def test_nothing_is_counted_outside_a_limit() -> None:
    scenario = csr_marl.load_scenario("standard_day", {"horizon_minutes": 120})
    result = csr_marl.simulate(scenario, policy="heuristic", seed=0)
    assert result.flow["arrived"] > work.HEAVY_AFTER_TICKETS  # no budget, no throttle, no error


def test_heavy_requests_take_turns_at_a_fraction_of_the_time() -> None:
    """Two runaway requests at once: each holds the heavy turn only in slices, so neither starves the
    other, and both end at their time budget."""
    scenario = csr_marl.load_scenario("standard_day", RUNAWAY)
    seconds = 1.5
    counts: list[int] = []

    def runaway(seed: int) -> None:
        session = TextSession(scenario, seed=seed, roles=("resolver",))
        try:
            with work_limit(10**7, seconds):
                session.reset(seed=seed)
        except WorkLimitReached:
            counts.append(session.center.flow["arrived"])

    threads = [threading.Thread(target=runaway, args=(seed,)) for seed in (1, 2)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(counts) == 2 and all(count > work.HEAVY_AFTER_TICKETS for count in counts), counts
    assert time.monotonic() - started < 30


def test_a_released_turn_goes_to_the_request_that_waited() -> None:
    """The request that just ended its turn queues behind one already waiting (a plain lock let it take
    the turn straight back, and a second runaway request waited out its budget without one turn)."""
    turns = work._Turns()
    meters = {name: work._Meter(10**6, time.monotonic() + 30, 30.0, ()) for name in "AB"}
    order: list[str] = []
    turns.take(meters["A"])

    def waiting() -> None:
        turns.take(meters["B"])
        order.append("B")
        turns.give_back()

    other = threading.Thread(target=waiting)
    other.start()
    while not turns._queue:  # B is waiting for the turn A holds
        time.sleep(0.001)
    turns.give_back()
    turns.take(meters["A"])
    order.append("A")
    turns.give_back()
    other.join(timeout=10)
    assert order == ["B", "A"]


def test_a_request_stopped_while_waiting_leaves_the_queue() -> None:
    turns = work._Turns()
    holder = work._Meter(10**6, time.monotonic() + 30, 30.0, ())
    stop = threading.Event()
    waiter = work._Meter(10**6, time.monotonic() + 30, 30.0, (stop,))
    turns.take(holder)
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(WorkLimitReached, match="stopped"):
        turns.take(waiter)
    assert not turns._queue
    turns.give_back()
    turns.take(work._Meter(10**6, time.monotonic() + 1, 1.0, ()))  # the turn is free again (else: over budget)
    turns.give_back()
