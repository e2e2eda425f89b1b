"""The contact center: one object that owns the SimPy environment and every piece of state.

Drive it with :meth:`ContactCenter.next_decision` / :meth:`ContactCenter.decide`::

    center = ContactCenter(scenario, seed=0)
    while (decision := center.next_decision()) is not None:
        center.decide(my_policy(decision))
    result = center.result()

The simulation runs between decisions and pauses whenever a staff member needs one; at most one decision
is pending at a time, and its order is the deterministic order of the event queue. A decision with a
single legal action is taken without asking (nobody is asked when there is nothing to decide).

Decision epochs (the parallel API) drive it with :meth:`ContactCenter.run_until` instead: the core runs
to the epoch's end and every decision that fell due meanwhile waits there, to be answered together
(:meth:`ContactCenter.decide` with the decision, in the order they fell due)::

    while (due := center.run_until(center.now + 2.0)) or not center.done:
        for decision in due:
            center.decide(my_policy(decision), decision)
"""

from __future__ import annotations

from collections import deque
from functools import partial
from pathlib import Path
from typing import Any, Callable, Final

import simpy
from simpy.events import PENDING

from ..config.domain import FACT_REVEALED_BY, PRIORITIES, RESOLVER_TOOLS, ROLES, SPECIALIST_TOOLS
from ..config.loading import load_ticket_bank
from ..config.scenario import Scenario
from .arrivals import arrival_blocks
from .customers import CustomerModel, Grader
from .decisions import ASKED, ROLE_TOOLS, Decision, IllegalActionError, Phase
from .errors import ConservationError
from .fact_details import reveal_detail
from .intervals import IntervalKpis, staffed_minutes
from .kpis import KpiAccumulator, TicketLog, headline_queue_of
from .queues import TicketQueue
from .random import RandomStreams, Sampler, UniformStream, make_sampler
from .result import SimulationResult
from .rewards import Prices, RewardLedger, WaitingMeter
from .staff import PICK_ACTIONS, Staff, rearmed, schedule, shift_process, staff_process, trigger
from .tickets import REFUND_TOOLS, Refund, Ticket, TicketFactory, damage_of, refund_verdict
from .work import charge_ticket


class ContactCenter:
    def __init__(
        self,
        scenario: Scenario,
        seed: Any = None,  # an int >= 0, a SeedSequence or None (RandomStreams checks it)
        *,
        track_rewards: bool = False,
        log: bool | str | Path = False,
        grader: Grader | None = None,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.bank = load_ticket_bank(scenario.tickets.bank)
        self.streams = RandomStreams(seed)
        self.env = simpy.Environment()
        self.horizon = scenario.horizon_minutes
        self.warmup = scenario.warmup_minutes
        self.queue_slots = scenario.observation.queue_slots
        self.weights = scenario.rewards
        self.factory = TicketFactory(scenario, self.bank, self.streams)
        # Moods, customer replies and reply grades; ``grader`` replaces the rubric (e.g. an LLM judge).
        self.customers = CustomerModel(scenario.customers.sentiment, grader)
        self.moods = self.customers.sentiment is not None  # moods off: no customer reacts to anything
        self._odds: tuple[dict[str, float], dict[str, float]] | None = None  # label odds for triage rewards
        # What staff said and customers answered, for the language interface: a list to append
        # ``(kind, agent, ticket, payload)`` events to, or None (nobody listens, nothing is kept).
        self.transcript: list[tuple[str, str, Ticket, dict[str, Any]]] | None = None
        # Roles whose replies are their player's own words: when the core answers for them (one
        # legal action left), the reply says nothing rather than the documented reply.
        self.own_words: frozenset[str] = frozenset()
        staffing = scenario.staffing
        self.peak = {role: staffing.peak(role) for role in ROLES}
        self.roles_present = tuple(role for role in ROLES if self.peak[role] > 0)
        self.queues = {
            "triage": TicketQueue("triage", by_priority=False),
            "resolver": TicketQueue("resolver"),
            "escalation": TicketQueue("escalation"),
        }
        self._queue_list = list(self.queues.values())
        self.staff_by_role: dict[str, list[Staff]] = {
            role: [
                Staff(role, i, self.queues[role], i < staffing.headcount_at(role, 0.0))
                for i in range(self.peak[role])
            ]
            for role in ROLES
        }
        self.staff: list[Staff] = [s for role in ROLES for s in self.staff_by_role[role]]
        self.idle: dict[str, deque[Staff]] = {role: deque() for role in ROLES}
        self.busy_staff = dict.fromkeys(ROLES, 0)  # staff with a ticket in hand, per role
        self.entry_queue = next(
            (self.queues[r] for r in ("triage", "resolver", "escalation") if self.peak[r] > 0)
        )
        self.rewards = RewardLedger(track_entries=track_rewards)
        self.prices = Prices.of(scenario)
        self.meter = WaitingMeter(self.prices.waiting)
        # Waiting costs nothing in any class: the meter would integrate zeros, so it is left alone.
        self._metered = any(self.meter.weight)
        # Priced like the manager's score, a customer who leaves has also missed their SLA.
        self._breach_on_leaving = scenario.rewards.pricing == "manager"
        self._has_shifts = bool(staffing.shifts)
        # Without patience nobody ever abandons: no queue holds a deadline, none needs purging.
        self.may_abandon = scenario.customers.patience is not None
        # The headline waits measure the queue a staffing study varies: the resolvers' when staffed.
        self.headline_queue = headline_queue_of(self.peak)
        self.kpis = KpiAccumulator(
            scenario.service_level.threshold_minutes,
            {role: self._staffed_minutes(role, self.horizon) for role in ROLES},
            self.headline_queue,
            IntervalKpis(scenario.service_level.interval_minutes, self.horizon, scenario.service_level.threshold_minutes),
            self.warmup, self.horizon - self.warmup,
        )
        self.flow = {"arrived": 0, "resolved": 0, "abandoned": 0, "closed_unresolved": 0}
        self.log: TicketLog | None = None
        if log:
            self.log = TicketLog(None if log is True else log)
        self._build_samplers()
        self._legal_cache: dict[tuple[str, bool, bool], list[int]] = {}
        self._max_actions = scenario.workflow.max_actions_per_ticket
        self._max_transfers = scenario.workflow.max_transfers_per_ticket
        self.legal_triage = [
            a for a in range(len(PRIORITIES) * 8)
            if self.peak["escalation"] > 0 or a % 2 == 0
        ]
        self._due: list[Decision] = []  # decisions waiting for an answer, in the order they fell due
        self.answer_event: simpy.Event | None = None  # the event of the latest decision asked
        self._policy: Callable[[Decision], int] | None = None  # answers inline (answer_inline)
        self._new_arrivals = 0
        self._arrivals_done = False
        self._returns_pending = 0
        self.done = False
        self.end_time: float | None = None
        self._on_arrival_callbacks: list[Callable[[Any], None]] = [self._on_arrival]
        self._start_arrivals()
        # The processes' generators, kept so that close() can end them.
        self._processes: list[Any] = [staff_process(self, staff) for staff in self.staff]
        if staffing.shifts:
            self._processes.append(shift_process(self))
        for process in self._processes:
            self.env.process(process)

    # --- driving --------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.env.now

    @property
    def pending(self) -> Decision | None:
        """The decision waiting for an answer (the first of them, in decision epochs)."""
        return self._due[0] if self._due else None

    @property
    def due(self) -> list[Decision]:
        """Every decision waiting for an answer, in the order they fell due."""
        return list(self._due)

    def next_decision(self) -> Decision | None:
        """Run until a decision is due and return it; ``None`` once the episode has ended."""
        if self.done:
            return None
        env = self.env
        horizon = self.horizon
        step = env.step
        events = env._queue  # SimPy's event heap: peeking it directly halves the loop's overhead
        due = self._due
        early_end = self.scenario.max_tickets is not None
        while not due:
            if early_end and self._arrivals_done and self._all_closed():
                self._finish(env._now)  # every ticket of a max_tickets episode is closed
                return None
            if not events or events[0][0] >= horizon:
                self._finish(horizon)
                return None
            step()
        self._settle(env._now)
        return due[0]

    def run_until(self, until: float) -> list[Decision]:
        """Run to minute ``until`` (a decision epoch's end) and return every decision due by then.

        Decisions that fall due during the epoch wait for its end (the decision latency of epochs):
        at ``until`` the queues are brought up to date and each waiting pick is shown the queue as it
        is now -- a pick whose queue emptied, or whose staff member went off shift meanwhile, is
        withdrawn (the staff member waits for work, or for the next shift), one with a single ticket
        left takes it. Returns ``[]`` once the episode has ended (at the horizon,
        or when a ``max_tickets`` episode has closed every ticket).
        """
        if self.done:
            return []
        env, events = self.env, self.env._queue
        end = min(until, self.horizon)
        step = env.step
        early_end = self.scenario.max_tickets is not None
        while events and events[0][0] < end:
            if early_end and self._all_closed():
                break
            step()
        if self._all_closed():
            self._finish(env._now)
            return []
        if end >= self.horizon:
            self._finish(self.horizon)
            return []
        if env._now < end:
            env.run(until=end)  # only the clock moves: no event is due before ``end``
        self._settle(end)
        for decision in list(self._due):
            if decision.phase is Phase.PICK:
                self._refresh_pick(decision)
        return list(self._due)

    def stop(self) -> None:
        """End the episode now (a driver's truncation before the horizon): KPIs cover minutes so far."""
        if not self.done:
            self._settle(self.env._now)
            self._finish(self.env._now)

    def close(self) -> None:
        """Drop what only running the episode needs: SimPy's pending events and the staff processes.

        Called when the episode ends, and by a driver that starts another before this one ended; the
        center cannot run on after it. Its KPIs, result, queues and tickets stay readable. The running
        episode's processes and events hold the center in reference cycles, which only Python's
        garbage collector frees, at its next full pass: once they are dropped, the center and every
        ticket of its episode are freed as soon as the last reference to the center goes.
        """
        for process in self._processes:
            process.close()  # GeneratorExit at the yield it waits in; the process's frame goes
        self._processes.clear()
        self.env._queue.clear()
        self._on_arrival_callbacks.clear()

    def _all_closed(self) -> bool:
        """A ``max_tickets`` episode is over: every ticket has arrived and is closed."""
        return (
            self.scenario.max_tickets is not None
            and self._arrivals_done and self._returns_pending == 0 and self.open_tickets == 0
        )

    def _settle(self, now: float) -> None:
        """Abandonments and waiting cost up to ``now``, before anybody decides."""
        if self.may_abandon:
            for queue in self._queue_list:
                if queue.next_deadline() <= now:
                    self.expire(queue)
        if self.meter.rate:
            self.rewards.add("waiting", self.meter.collect(now))

    def _refresh_pick(self, decision: Decision) -> None:
        staff = decision.staff
        slots = staff.queue.visible(self.queue_slots) if staff.on_duty else []  # off shift: no new ticket
        if len(slots) > 1:
            decision.slots = slots
            decision.legal = PICK_ACTIONS[len(slots)]
            return
        self._due.remove(decision)
        self.answer_event = None
        staff.last_decision = self.env._now
        if slots:
            self.start_service(staff, slots[0])
        trigger(self.env, decision.event, slots[0] if slots else None)

    def decide(
        self, action: int, decision: Decision | None = None, *, text: str | None = None, refund: Refund | None = None
    ) -> None:
        """Answer ``decision`` (by default the pending one) with ``action``, a legal index for its role.

        ``text`` is what the staff member writes with a work tool: the message of ``respond_user``
        (graded when the reply is sent; None sends the documented reply) or the question of
        ``ask_customer`` (None asks about the next open topic). ``refund`` is a refund's amount and
        order (None: what is owed); a wrong amount or order is a wrong step and a refund that is not
        owed is collateral damage (:func:`~csr_marl.sim.tickets.refund_verdict`).

        A pick whose ticket was taken by a colleague answered earlier in the same epoch takes the
        first of its visible tickets still waiting, or, if none is, nobody (the staff member waits for
        work again). An illegal action raises :class:`IllegalActionError` and changes nothing.
        """
        if decision is None:
            decision = self.pending
            if decision is None:
                raise RuntimeError("no decision is pending: call next_decision() first")
        elif decision not in self._due:
            raise RuntimeError(f"{decision.agent}'s decision is not waiting for an answer")
        self._check_legal(decision, action)
        self._due.remove(decision)
        if decision.phase is Phase.WORK:
            assert decision.ticket is not None
            decision.ticket.said = text
            decision.ticket.offered = refund
        self._resolve(decision, int(action))

    def answer_inline(self, policy: Callable[[Decision], int] | None) -> None:
        """Let ``policy`` answer decisions from inside the staff processes, without pausing SimPy.

        For drivers that answer every decision with the same function (``simulate`` with a built-in
        policy): a decision whose answer would be the very next event anyway (nothing else is due at
        this minute) is answered at once, which spares the pause, the answer event and the resumption.
        Otherwise it waits for :meth:`decide` as usual, so events keep their order and every result
        is the same as when the driver answers each decision itself. ``None`` pauses for every one.
        """
        self._policy = policy

    @staticmethod
    def _check_legal(decision: Decision, action: int) -> None:
        if not (decision.allows(action) if type(action) is int else action in decision.legal):
            raise IllegalActionError(
                f"{decision.agent} ({decision.phase.value}): action {action!r} is not legal now; "
                f"legal actions: {decision.legal}"
            )

    def ask(self, staff: Staff, phase: Phase, legal: list[int], *, ticket: Ticket | None = None,
            slots: list[Ticket] | None = None) -> Any:
        """Called by staff processes to request a decision.

        Returns the answer at once when only one action is legal, or when the inline policy answers
        it (:meth:`answer_inline`); otherwise pauses the simulation and returns :data:`ASKED`, and the
        process then yields :attr:`answer_event` for the answer.
        """
        now = self.env._now
        if len(legal) == 1:
            staff.last_decision = now
            if ticket is not None:
                # The documented reply, unless this role's words are its player's own (language agents).
                ticket.said = "" if staff.role in self.own_words else None
            if phase is Phase.PICK:
                assert slots
                self.start_service(staff, slots[0])
                return slots[0]
            return legal[0]
        policy = self._policy
        if policy is not None:
            events = self.env._queue
            if not events or events[0][0] > now:
                # The answer event would be the next one processed: answer here, as the driver would.
                return self._ask_inline(policy, staff, phase, now, legal, ticket, slots)
        decision = Decision(staff, phase, now, legal, ticket, slots or [], self.queue_slots)
        # The staff member's answer event is reused: the last one was processed before its process
        # resumed and asked again, and only that process waits on it.
        event = staff.answer
        if event is None:
            event = staff.answer = self.env.event()
        else:
            rearmed(event)
        decision.event = self.answer_event = event
        self._due.append(decision)
        return ASKED

    def _ask_inline(self, policy: Callable[[Decision], int], staff: Staff, phase: Phase, now: float,
                    legal: list[int], ticket: Ticket | None, slots: list[Ticket] | None) -> Any:
        """Answer a decision with the inline policy, on the staff member's own decision object (it
        never leaves this call, so one per staff member is reused)."""
        decision = staff.decision
        if decision is None:
            decision = staff.decision = Decision(staff, phase, now, legal, ticket, slots or [], self.queue_slots)
        else:
            decision.phase, decision.time, decision.legal = phase, now, legal
            decision.ticket, decision.slots = ticket, slots or []
        self._settle(now)
        action = policy(decision)
        if action not in legal:  # a short list scanned in C: cheaper here than a call (pure build)
            self._check_legal(decision, action)  # raises
        if phase is Phase.WORK:
            staff.last_decision = now
            ticket.said = None  # type: ignore[union-attr]
            return int(action)
        return self._answer(decision, int(action))

    def _resolve(self, decision: Decision, action: int) -> None:
        self.answer_event = None
        event = decision.event
        value = self._answer(decision, action)
        events = self.env._queue
        if self._due or (events and events[0][0] <= self.env._now):
            trigger(self.env, event, value)  # something else comes first: the answer waits its turn in SimPy's heap
            return
        # Nothing else is due at this minute, so the answer is the very next event SimPy would process:
        # process it here as Environment.step would (the waiting process resumes), without the heap.
        event._ok = True
        event._value = value
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)

    def _answer(self, decision: Decision, action: int) -> Any:
        """Carry out ``action``: what the staff member's process receives (a pick: the ticket taken)."""
        staff = decision.staff
        staff.last_decision = self.env._now
        if decision.phase is Phase.PICK:
            # Take the ticket now, not when the process resumes, so nobody else can pick it.
            shown = decision.slots[action]
            ticket: Ticket | None = shown
            waiting_here = staff.queue.name
            if shown.waiting_in is not waiting_here:  # taken (or gone) since the slots were shown
                ticket = next((t for t in decision.slots if t.waiting_in is waiting_here), None)
            if ticket is not None:
                self.start_service(staff, ticket)
            return ticket
        return action

    # --- arrivals -------------------------------------------------------------------------------
    def _start_arrivals(self) -> None:
        """Schedule the first arrival. Arrivals need no process: one event, re-armed after each
        arrival for the next one, carries them all (no generator to resume, no event per arrival)."""
        self._arrival_blocks = arrival_blocks(self.scenario.arrivals, self.horizon, self.streams["arrivals"])
        self._arrival_block: list[float] = []  # the arrival times at hand, and the next one's index
        self._arrival_index = 0
        self._arrival_event = simpy.Event(self.env)
        self._arrival_event._ok = True
        self._arrival_event._value = None
        self._next_arrival()

    def _next_arrival(self) -> None:
        """Arm the arrival event for the next arrival time, or mark the arrivals done."""
        block, i = self._arrival_block, self._arrival_index
        while i == len(block):
            following = next(self._arrival_blocks, None)
            if following is None:
                self._arrivals_done = True
                return
            self._arrival_block, block, i = following, following, 0
        self._arrival_index = i + 1
        self._arrival_at = t = block[i]
        event = self._arrival_event
        event.callbacks = self._on_arrival_callbacks
        schedule(self.env, event, t - self.env._now)

    def _on_arrival(self, _event: simpy.Event) -> None:
        """The arrival event fired: the customer arrives, and the event is armed for the next one."""
        self._new_arrivals += 1
        self.arrive(self.factory.new(self._arrival_at))
        limit = self.scenario.max_tickets
        if limit is not None and self._new_arrivals >= limit:
            self._arrivals_done = True
            return
        self._next_arrival()

    def arrive(self, ticket: Ticket) -> None:
        charge_ticket()  # a server's per-request work budget (nothing outside one: one test)
        self.flow["arrived"] = self.flow["arrived"] + 1
        self.kpis.arrived(ticket)
        self.enqueue(ticket, self.entry_queue)

    def enqueue(self, ticket: Ticket, queue: TicketQueue) -> None:
        now = self.env._now
        queue.push(ticket, now)
        self.kpis.queue_entered(queue.name, ticket)
        if self._metered:
            self.meter.change(now, self.meter.weight[ticket.cell])
        idle = self.idle[queue.name]
        while idle:
            staff = idle.popleft()
            if staff.on_duty and staff.wake is not None and staff.wake._value is PENDING:
                trigger(self.env, staff.wake)
                break

    def expire(self, queue: TicketQueue, now: float | None = None) -> None:
        """Purge customers whose patience ran out while waiting in ``queue`` (by ``now``)."""
        now = self.env._now if now is None else now
        prices = self.prices
        for ticket in queue.expired(now):
            cell = ticket.cell
            weight = self.meter.weight[cell]
            self.meter.change(now, -weight)
            self.meter.refund(weight, now - ticket.deadline)
            self.flow["abandoned"] = self.flow["abandoned"] + 1
            waited = max(0.0, ticket.deadline - ticket.enqueued_at)
            ticket.queue_wait += waited
            self.kpis.queue_minutes(ticket, waited)
            self.kpis.queue_unanswered(queue.name, ticket, abandoned=True)
            self.kpis.abandoned(ticket, max(0.0, ticket.deadline - ticket.arrival))
            mood = self.customers.mood_on_leaving(ticket, max(0.0, ticket.deadline - ticket.enqueued_at))
            if mood is not None:
                self.kpis.left(ticket, *mood)
            self.kpis.count("sla_breached", ticket)
            self.rewards.add("abandonment", prices.abandonment[cell])
            if self._breach_on_leaving:
                self.rewards.add("sla_breach", prices.sla_breach[cell])
            if self.log is not None:
                self.log.write(ticket, "abandoned", ticket.deadline)

    # --- service --------------------------------------------------------------------------------
    def start_service(self, staff: Staff, ticket: Ticket) -> None:
        now = self.env._now
        queue = staff.queue  # staff only ever take from their own queue (take() checks the ticket waits there)
        waited = queue.take(ticket, now)
        if self._metered:
            self.meter.change(now, -self.meter.weight[ticket.cell])
        ticket.queue_wait += waited
        if ticket.counted:
            self.kpis.queue_minutes_by_cell[ticket.cell] += waited
        if waited > 0 and self.moods:
            self.customers.waited(ticket, waited)
        if ticket.answered_at is None:  # its first answer by anybody
            ticket.answered_at = now
            since_arrival = now - ticket.arrival
            self.kpis.taken(queue.name, ticket, waited, since_arrival if since_arrival > 0.0 else 0.0)
        else:
            self.kpis.taken(queue.name, ticket, waited, None)
        staff.ticket = ticket
        staff.busy_since = now
        self.busy_staff[staff.role] = self.busy_staff[staff.role] + 1

    def end_service(self, staff: Staff) -> None:
        now = self.env._now
        self.rewards.add("staff_time", (now - staff.busy_since) * self.prices.staff_minute[staff.role], staff.name)
        self._add_busy(staff, now)
        staff.ticket = None
        self.busy_staff[staff.role] = self.busy_staff[staff.role] - 1

    def _add_busy(self, staff: Staff, until: float, finished: bool = True) -> None:
        start = staff.busy_since
        if start < self.warmup:
            start = self.warmup
        if until > start:
            # Finishing a ticket after going off shift is busy *and* available time (overtime),
            # so occupancy stays a share of the minutes staff actually spent on the floor.
            off_shift = self._off_shift_minutes(staff, start, until) if self._has_shifts else 0.0
            span = self.kpis.busy_span if finished else self.kpis.unfinished_span
            span(staff.role, start, until, off_shift)

    def _off_shift_minutes(self, staff: Staff, start: float, until: float) -> float:
        shifts = self.scenario.staffing.shifts
        if not shifts:
            return 0.0
        staffing = self.scenario.staffing
        edges = (start, *staffing.changes_between(start, until), until)
        return sum(
            b - a for a, b in zip(edges, edges[1:]) if staff.index >= staffing.headcount_at(staff.role, a)
        )

    def score_triage(self, staff: Staff, ticket: Ticket, category: str, priority: str, route: str) -> None:
        w, agent = self.weights, staff.name
        right_category = category == ticket.true_category
        distance = abs(PRIORITIES.index(priority) - PRIORITIES.index(ticket.true_priority))
        right_route = (route == "escalation") == ticket.requirement.needs_escalation
        if w.labels_against_chance:  # a blind guess earns nothing on average (Rewards.labels_against_chance)
            categories, routes = self._label_odds()
            category_reward = w.classification_right * (1.0 if right_category else -categories[category])
            route_reward = w.routing_right * (1.0 if right_route else -routes[route])
        else:
            category_reward = w.classification_right if right_category else 0.0
            route_reward = w.routing_right if right_route else w.routing_wrong
        self.rewards.add("classification", category_reward, agent)
        self.rewards.add("priority", w.priority_right if distance == 0 else w.priority_wrong_per_level * distance, agent)
        self.rewards.add("routing", route_reward, agent)
        if route == "escalation" and not right_route:
            ticket.misroute = route_reward  # a correct send-back undoes it, and earns nothing more
        if ticket.counted:
            t = self.kpis.triage
            t["triaged"] = t["triaged"] + 1
            t["category_right"] = t["category_right"] + right_category
            t["priority_right"] = t["priority_right"] + (distance == 0)
            t["route_right"] = t["route_right"] + right_route

    def _label_odds(self) -> tuple[dict[str, float], dict[str, float]]:
        """p / (1 - p) per category and route, p the share of tickets the label is right for (once)."""
        odds = self._odds
        if odds is None:
            shares = self.factory.label_shares()
            categories, routes = (
                {label: p / (1.0 - p) if p < 1.0 else 0.0 for label, p in share.items()} for share in shares
            )
            odds = self._odds = (categories, routes)
        return odds

    def route_after_triage(self, ticket: Ticket, category: str, priority: str, route: str) -> None:
        ticket.assigned_category = category
        ticket.assigned_priority = priority
        ticket.triaged = True
        if route == "escalation":
            self._escalate(ticket)
        else:
            ticket.stage = "resolver"
            self.enqueue(ticket, self.queues["resolver"])

    def _escalate(self, ticket: Ticket) -> None:
        ticket.stage = "escalation"
        if not ticket.escalated:
            self.kpis.count("escalated", ticket)
        ticket.escalated = True
        self.enqueue(ticket, self.queues["escalation"])

    def legal_work(self, role: str, ticket: Ticket) -> list[int]:
        capped = ticket.actions >= self._max_actions
        settled = ticket.transfers >= self._max_transfers
        key = (role, capped, settled)
        legal = self._legal_cache.get(key)
        if legal is None:
            tools = ROLE_TOOLS[role]
            allowed = set(tools)
            if capped:
                allowed &= {"respond_user", "escalate_issue", "return_to_resolver"}
            if settled or self.peak["escalation"] == 0:
                allowed.discard("escalate_issue")
            if settled or self.peak["resolver"] == 0:
                allowed.discard("return_to_resolver")
            legal = [self.queue_slots + i for i, tool in enumerate(tools) if tool in allowed]
            self._legal_cache[key] = legal
        return legal

    def apply_tool(self, staff: Staff, ticket: Ticket, tool: str) -> bool:
        """Effects of a finished tool action; True when the ticket left the staff member's hands."""
        w, agent = self.weights, staff.name
        if tool == "respond_user":
            self._close(staff, ticket)
            return True
        if tool == "ask_customer":
            self._ask_customer(staff, ticket)
            return False
        if tool in ("escalate_issue", "return_to_resolver"):
            needs = ticket.requirement.needs_escalation
            if tool == "escalate_issue":
                reward = w.routing_right if needs else w.routing_wrong
                if not needs:
                    ticket.misroute = reward
            else:  # a send-back only undoes the misroute that sent it here; a wrong one costs
                reward = w.routing_wrong if needs else -ticket.misroute
                ticket.misroute = 0.0
            self.rewards.add("routing", reward, agent)
            ticket.transfers += 1
            self.customers.handed_over(ticket)
            if tool == "escalate_issue":
                self._escalate(ticket)
            else:
                ticket.stage = "resolver"
                self.enqueue(ticket, self.queues["resolver"])
            return True
        needed = ticket.is_needed(tool)
        verdict = "right"
        if tool in REFUND_TOOLS:
            refund, ticket.offered = ticket.offered, None
            verdict = refund_verdict(ticket, refund)
            needed = needed and verdict == "right"
        damage = None if needed else damage_of(ticket, tool, staff.role, verdict)  # only a needless call harms
        if damage != "collateral_damage":  # a refund not owed is priced as damage, not as a step
            self.rewards.add("step", w.step_needed if needed else w.step_wasted, agent)
        if damage is not None:
            price = self.prices.collateral_damage if damage == "collateral_damage" else self.prices.wrong_specialist_work
            self.rewards.add("damage", price, agent)
            self.kpis.damage(damage, ticket)
        if not needed:
            self.customers.wasted_step(ticket)
        if tool not in ticket.done and not verdict.startswith("wrong"):  # a wrong refund leaves it owed
            ticket.done = (*ticket.done, tool)
        fact = _FACT_OF.get(tool)
        if fact is not None and fact in ticket.facts:
            ticket.revealed[fact] = ticket.facts[fact]
            detail = reveal_detail(ticket, fact, self.streams.root.entropy)
            if detail is not None:
                ticket.details[fact] = detail
        return False

    def _ask_customer(self, staff: Staff, ticket: Ticket) -> None:
        """The customer's reply has come in (the tool's time was theirs): a repeat costs a wasted step."""
        question, ticket.said = ticket.said, None
        reply, repeated = self.customers.answer(ticket, question)
        if repeated:
            self.rewards.add("step", self.weights.step_wasted, staff.name)
        if self.transcript is not None:
            self.transcript.append(("customer_reply", staff.name, ticket, {"question": question, "reply": reply}))

    def _close(self, staff: Staff, ticket: Ticket) -> None:
        now = self.env._now
        w, agent = self.weights, staff.name
        resolved = ticket.resolvable()
        on_time = resolved and now <= ticket.sla_deadline
        message, ticket.said = ticket.said, None
        grade = self.customers.grade(ticket, message, resolved)
        self.rewards.add("response", w.response_quality * grade.score, agent)
        mood = self.customers.mood_on_leaving(ticket) if self.moods else None
        if self.transcript is not None:
            self.transcript.append(("reply_grade", agent, ticket, {
                "message": message, "resolved": resolved, "score": grade.score,
                "parts": dict(grade.parts), "notes": list(grade.notes),
            }))
        if resolved:
            self.flow["resolved"] = self.flow["resolved"] + 1
            self.rewards.add("resolution", self.prices.resolution[ticket.cell], agent)
        else:
            self.flow["closed_unresolved"] = self.flow["closed_unresolved"] + 1
            self._maybe_return(ticket)
        if not on_time:
            self.rewards.add("sla_breach", self.prices.sla_breach[ticket.cell], agent)
        if ticket.counted:
            self.kpis.closed(ticket, resolved, on_time, grade.score, mood)
        if self.log is not None:
            self.log.write(ticket, "resolved" if resolved else "closed_unresolved", now)

    def _maybe_return(self, ticket: Ticket) -> None:
        reopen = self.scenario.customers.reopen
        if ticket.returns >= reopen.max_returns:
            return
        if self._return_draw() >= self.customers.reopen_probability(ticket, reopen.probability):
            return
        self._returns_pending += 1
        event = self.env.timeout(self._return_delay())
        event.callbacks.append(partial(self._come_back, ticket))  # no closure: no reference cycle

    def _come_back(self, old: Ticket, _event: object = None) -> None:
        self._returns_pending -= 1
        ticket = self.factory.returning(old, self.env.now)
        self.customers.rescale_patience(ticket)  # they remember how the last contact went
        self.arrive(ticket)

    # --- sampling -------------------------------------------------------------------------------
    def _build_samplers(self) -> None:
        rng = self.streams["handle_times"]
        times = self.scenario.handle_times
        self._triage_sampler = make_sampler(times.triage, rng)
        self._tool_samplers: dict[tuple[str, bool], Sampler] = {}
        for tool in RESOLVER_TOOLS:
            self._tool_samplers[(tool, False)] = make_sampler(times.for_tool(tool), rng)
        for tool in SPECIALIST_TOOLS:
            self._tool_samplers[(tool, True)] = make_sampler(times.for_tool(tool, True), rng)
        # The customer's time to answer a question comes from a stream of its own, so asking never
        # shifts anybody's handle times.
        talk = self.streams["dialogue"]
        for at_desk in (False, True):
            self._tool_samplers[("ask_customer", at_desk)] = make_sampler(times.for_tool("ask_customer", at_desk), talk)
        returns = self.streams["returns"]
        self._return_draw = UniformStream(returns)
        self._return_delay = make_sampler(self.scenario.customers.reopen.delay, returns)

    def triage_time(self) -> float:
        return self._triage_sampler()

    def tool_time(self, tool: str, at_desk: bool) -> float:
        return self._tool_samplers[(tool, at_desk)]()

    def tool_samplers(self, at_desk: bool) -> dict[str, Sampler]:
        """Each tool's handle-time sampler at the desk or not (a staff process keeps its own)."""
        return {tool: sampler for (tool, desk), sampler in self._tool_samplers.items() if desk == at_desk}

    # --- accounting -----------------------------------------------------------------------------
    @property
    def open_tickets(self) -> int:
        f = self.flow
        return f["arrived"] - f["resolved"] - f["abandoned"] - f["closed_unresolved"]

    def in_system(self) -> int:
        """Tickets physically present: waiting in a queue or in someone's hands."""
        return sum(q.size for q in self.queues.values()) + sum(s.ticket is not None for s in self.staff)

    def check_conservation(self) -> None:
        """Raise :class:`ConservationError` unless every ticket that arrived is accounted for."""
        present = self.in_system()
        if self.open_tickets != present:
            raise ConservationError(
                f"at minute {self.env.now:.3f}: arrived {self.flow['arrived']} != resolved "
                f"{self.flow['resolved']} + abandoned {self.flow['abandoned']} + closed_unresolved "
                f"{self.flow['closed_unresolved']} + in_system {present}"
            )

    def _staffed_minutes(self, role: str, end: float) -> float:
        return staffed_minutes(self.scenario.staffing, role, self.warmup, end)

    def _finish(self, end: float) -> None:
        self.end_time = end
        self._due.clear()  # decisions still waiting at the end are never taken
        for queue in self.queues.values():
            self.expire(queue, end)
        self.rewards.add("waiting", self.meter.collect(end))
        for staff in self.staff:
            if staff.ticket is not None:
                self.rewards.add("staff_time", (end - staff.busy_since) * self.prices.staff_minute[staff.role], staff.name)
                self._add_busy(staff, end, finished=False)
                self._open_at_end(staff.ticket, end)
        for queue in self.queues.values():
            for ticket in queue:
                self.kpis.queue_unanswered(queue.name, ticket, abandoned=False)
                self.kpis.queue_minutes(ticket, end - ticket.enqueued_at)
                self._open_at_end(ticket, end)
        if end != self.horizon:
            self.kpis.window_minutes = end - self.warmup
            for role in ROLES:
                self.kpis.available[role] = self._staffed_minutes(role, end)
        self.check_conservation()
        if self.log is not None:
            self.log.close()
        self.done = True
        self.close()

    def _open_at_end(self, ticket: Ticket, end: float) -> None:
        self.kpis.count("in_system_at_end", ticket)
        self.kpis.never_answered(ticket)  # still waiting for a first answer, if nobody answered
        if end > ticket.sla_deadline:
            self.kpis.count("sla_breached", ticket)
            self.rewards.add("sla_breach", self.prices.sla_breach[ticket.cell])
        if self.log is not None:
            self.log.write(ticket, "open", end)

    # --- results --------------------------------------------------------------------------------
    def result(self) -> SimulationResult:
        if not self.done:
            raise RuntimeError("the episode has not ended yet")
        return SimulationResult(
            scenario=self.scenario.name,
            seed=self.seed,
            end_minute=float(self.end_time or self.horizon),
            kpis=self.kpis.summary(),
            breakdown=self.kpis.breakdown(),
            by_class=self.kpis.by_class(),
            reward_components=dict(self.rewards.totals),
            flow=dict(self.flow),
            log=self.log.records if self.log is not None else None,
            intervals=self.kpis.intervals.table(
                self.scenario.staffing, self.warmup, float(self.end_time or self.horizon), self.headline_queue
            ),
            interval_minutes=self.scenario.service_level.interval_minutes,
        )


_FACT_OF: Final = {tool: fact for fact, tool in FACT_REVEALED_BY.items()}
