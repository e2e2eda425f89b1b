"""Streaming KPI accumulators (memory flat in the number of tickets) and the opt-in ticket log.

Counts are kept per cell (priority x tier x category) so every breakdown comes from the same numbers.
Waits go into a fixed-width histogram for percentiles. Only contacts that arrive after the warm-up count.

Waits are measured per queue (triage inbox, resolver queue, escalation queue), once per contact and
queue: a contact's wait in a queue runs from its first entry into that queue to the first time a
member of that queue's role takes it. The headline ``service_level``, ``asa_minutes``, ``p_wait`` and
wait percentiles measure the *headline queue*: the resolver queue when the scenario staffs resolvers,
else the queue contacts enter first (what a staffing study varies). ``*_first_response`` measure the
first touch by anybody; ``*_<queue>`` each queue. :func:`kpi_definitions` states all of them.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Final, TextIO

from ..config.domain import CATEGORIES, PRIORITIES, ROLES, TIERS
from ..config.scenario import Scenario
from .intervals import IntervalKpis
from .tickets import CELLS, N_CELLS, Ticket

COUNTS: Final[tuple[str, ...]] = (
    "offered", "queued", "answered", "answered_in_threshold", "waited", "resolved", "abandoned",
    "closed_unresolved", "escalated", "reopened", "first_contact_resolved", "first_contact_closed",
    "sla_met", "sla_breached", "in_system_at_end",
)
_CLASS_COLUMNS: Final = ("offered", "resolved", "abandoned", "sla_breached", "queue_minutes")
BIN_MINUTES: Final = 0.05
N_BINS: Final = 24_000  # 1,200 minutes; longer waits land in the last bin
QUEUES: Final[tuple[str, ...]] = ("triage", "resolver", "escalation")
# Bits of ``Ticket.queue_marks``: the contact entered a queue / was taken from it (first time only).
_ENTERED: Final = {name: 1 << i for i, name in enumerate(QUEUES)}
_TAKEN: Final = {name: 1 << (i + len(QUEUES)) for i, name in enumerate(QUEUES)}
# Per-queue totals, first visit of each contact: offered, answered, answered within the threshold,
# waited (answered after a wait, abandoned, or still waiting at the end), wait sum of answered,
# abandoned there.
_OFFERED: Final = 0
_ANSWERED: Final = 1
_IN_THRESHOLD: Final = 2
_WAITED: Final = 3
_WAIT_SUM: Final = 4
_ABANDONED: Final = 5


class KpiAccumulator:
    """Counts, wait sums and histograms, updated as events happen."""

    def __init__(
        self, threshold_minutes: float, roles_available: dict[str, float], headline_queue: str = "resolver",
        intervals: IntervalKpis | None = None, warmup_minutes: float = 0.0, window_minutes: float = math.nan,
    ) -> None:
        self.threshold = threshold_minutes
        # Per-interval counters (see csr_marl.sim.intervals); the hot paths below index them inline.
        self.intervals = intervals = intervals or IntervalKpis(30, 480, threshold_minutes)
        self._per_minute, self._last = intervals._per_minute, intervals.n - 1
        self._arrived_by_interval, self._entered_by_interval = intervals.arrived, intervals._offered
        self._busy_by_interval = intervals.busy
        self._answered_by_interval = intervals.answered_columns  # answered, wait sum, within threshold
        self.warmup = warmup_minutes
        self.window_minutes = window_minutes  # the measured minutes (after the warm-up)
        # Every entry into a queue after the warm-up (revisits and contacts arriving before it too),
        # and every service whose busy time counts: the offered load's numerator and its unit.
        self.entries = dict.fromkeys(QUEUES, 0)
        self.services = dict.fromkeys(ROLES, 0)  # completed services (see unfinished_span)
        self.unfinished = dict.fromkeys(ROLES, 0)  # services cut off by the end of the episode
        self.headline_queue = headline_queue
        # KPIs a driver adds to the summary (the environments: illegal_actions, illegal_action_share).
        self.extra: dict[str, float] = {}
        self.counts: dict[str, list[int]] = {name: [0] * N_CELLS for name in COUNTS}
        self.answered_wait = [0.0] * N_CELLS
        self.abandoned_wait = 0.0
        self.wait_hist = [0] * (N_BINS + 1)  # positive waits in the headline queue only
        self.zero_waits = 0
        self.first_response: list[float] = [0, 0, 0, 0, 0.0, 0]  # laid out as a queue's totals
        self.per_queue: dict[str, list[float]] = {name: [0, 0, 0, 0, 0.0, 0] for name in QUEUES}
        self.busy = {role: 0.0 for role in ROLES}
        self.overtime = {role: 0.0 for role in ROLES}  # busy minutes finishing a ticket off shift
        self.available = roles_available
        self.triage = {"triaged": 0, "category_right": 0, "priority_right": 0, "route_right": 0}
        # The customer's mood when the contact left (closed or abandoned), and the replies' grades.
        self.mood = {"left": 0, "sentiment_sum": 0.0, "upset": 0}
        # Minutes counted contacts spent waiting in any queue (every visit, up to their answer, their
        # abandonment or the end), per cell; and the damage done to them (the manager's score's inputs).
        self.queue_minutes_by_cell = [0.0] * N_CELLS
        self.damages = {"collateral_damage": 0, "wrong_specialist_work": 0}
        self.replies = {"graded": 0, "score_sum": 0.0}
        self._offered, self._reopened, self._queued = (self.counts[n] for n in ("offered", "reopened", "queued"))

    # --- events -----------------------------------------------------------------------------------
    def count(self, name: str, ticket: Ticket) -> None:
        if ticket.counted:
            self.counts[name][ticket.cell] += 1

    def queue_minutes(self, ticket: Ticket, minutes: float) -> None:
        """The contact waited ``minutes`` in a queue (answered, abandoned, or still waiting at the end)."""
        if ticket.counted:
            self.queue_minutes_by_cell[ticket.cell] += minutes

    def damage(self, kind: str, ticket: Ticket) -> None:
        """Damage done to the contact: ``collateral_damage`` or ``wrong_specialist_work``."""
        if ticket.counted:
            self.damages[kind] = self.damages[kind] + 1

    def by_class(self) -> dict[str, dict[str, float]]:
        """Per class of customer (``"priority/tier"``): offered, resolved, abandoned, SLA breaches and
        the minutes they waited in queues (every visit); what the manager's score prices."""
        table: dict[str, dict[str, float]] = {}
        for cell, (priority, tier) in enumerate(CELLS):
            row = table.setdefault(f"{priority}/{tier}", dict.fromkeys(_CLASS_COLUMNS, 0.0))
            for name in _CLASS_COLUMNS[:-1]:
                row[name] += self.counts[name][cell]
            row["queue_minutes"] += self.queue_minutes_by_cell[cell]
        return table

    def left(self, ticket: Ticket, sentiment: float, upset: bool) -> None:
        """A contact left the center (closed or abandoned) with the customer in this mood."""
        if ticket.counted:
            mood = self.mood
            mood["left"] = mood["left"] + 1
            mood["sentiment_sum"] = mood["sentiment_sum"] + sentiment
            mood["upset"] = mood["upset"] + upset

    def arrived(self, ticket: Ticket) -> None:
        """A contact arrived (offered; a returning customer's contact is also a reopening)."""
        if ticket.counted:
            cell = ticket.cell
            self._offered[cell] = self._offered[cell] + 1
            if ticket.contact:
                self._reopened[cell] = self._reopened[cell] + 1
            i = int(ticket.arrival * self._per_minute)
            self._arrived_by_interval[i if i < self._last else self._last] += 1

    def closed(self, ticket: Ticket, resolved: bool, on_time: bool, score: float,
               mood: tuple[float, bool] | None) -> None:
        """A counted contact was closed by a reply graded ``score`` (0.0-0.5), resolved or not, with
        the customer in ``mood`` (sentiment, upset) as they left, or None when moods are off."""
        replies = self.replies
        replies["graded"] = replies["graded"] + 1
        replies["score_sum"] = replies["score_sum"] + score
        if mood is not None:
            self.left(ticket, *mood)
        cell, c = ticket.cell, self.counts
        c["resolved" if resolved else "closed_unresolved"][cell] += 1
        c["sla_met" if on_time else "sla_breached"][cell] += 1
        if ticket.contact == 0:
            c["first_contact_closed"][cell] += 1
            if resolved:
                c["first_contact_resolved"][cell] += 1

    def queue_entered(self, queue: str, ticket: Ticket) -> None:
        """The contact entered ``queue``; only its first visit counts."""
        at = ticket.enqueued_at
        if at >= self.warmup:
            self.entries[queue] = self.entries[queue] + 1
        bit = _ENTERED[queue]
        marks = ticket.queue_marks
        if marks & bit:
            return
        ticket.queue_marks = marks | bit  # only a contact's first visit of each queue counts
        if not ticket.counted:
            return
        self.per_queue[queue][_OFFERED] += 1
        i = int(at * self._per_minute)
        self._entered_by_interval[queue][i if i < self._last else self._last] += 1
        if queue == self.headline_queue:
            self._queued[ticket.cell] = self._queued[ticket.cell] + 1

    def taken(self, queue: str, ticket: Ticket, wait: float, first_wait: float | None) -> None:
        """A member of the queue's role took the contact after ``wait`` minutes in ``queue`` (first
        visit only); ``first_wait`` is the wait since arrival when this is its first answer by
        anybody (first response), None when somebody answered it before."""
        bit = _TAKEN[queue]
        marks = ticket.queue_marks
        ticket.queue_marks = marks | bit
        if not ticket.counted:
            return
        threshold = self.threshold
        if first_wait is not None:  # the first response's totals, laid out as a queue's
            first = self.first_response
            first[_ANSWERED] = first[_ANSWERED] + 1
            first[_IN_THRESHOLD] = first[_IN_THRESHOLD] + (first_wait <= threshold)
            first[_WAITED] = first[_WAITED] + (first_wait > 0)
            first[_WAIT_SUM] = first[_WAIT_SUM] + first_wait
        if marks & bit:
            return
        in_threshold = wait <= threshold
        stats = self.per_queue[queue]
        stats[_ANSWERED] = stats[_ANSWERED] + 1
        stats[_IN_THRESHOLD] = stats[_IN_THRESHOLD] + in_threshold
        stats[_WAITED] = stats[_WAITED] + (wait > 0)
        stats[_WAIT_SUM] = stats[_WAIT_SUM] + wait
        i = int(ticket.enqueued_at * self._per_minute)
        columns = self._answered_by_interval[queue]
        if i > self._last:
            i = self._last
        columns[0][i] += 1
        columns[1][i] += wait
        if in_threshold:
            columns[2][i] += 1
        if queue != self.headline_queue:
            return
        cell = ticket.cell
        c = self.counts
        c["answered"][cell] += 1
        self.answered_wait[cell] = self.answered_wait[cell] + wait
        if in_threshold:
            c["answered_in_threshold"][cell] += 1
        if wait > 0:
            c["waited"][cell] += 1
            self.wait_hist[min(int(wait / BIN_MINUTES), N_BINS)] += 1
        else:
            self.zero_waits += 1

    def queue_unanswered(self, queue: str, ticket: Ticket, abandoned: bool) -> None:
        """The contact abandoned ``queue`` unanswered, or was still waiting there at the end."""
        if not ticket.counted or ticket.queue_marks & _TAKEN[queue]:
            return
        stats = self.per_queue[queue]
        stats[_WAITED] = stats[_WAITED] + 1
        stats[_ABANDONED] = stats[_ABANDONED] + abandoned
        if abandoned:
            self.intervals.gave_up(queue, ticket.enqueued_at)
        if queue == self.headline_queue:
            self.counts["waited"][ticket.cell] += 1

    def abandoned(self, ticket: Ticket, wait: float) -> None:
        """The customer hung up (``wait`` minutes after arriving); one count per contact."""
        if ticket.counted:
            self.counts["abandoned"][ticket.cell] += 1
            self.abandoned_wait += wait
            self.intervals.contact_abandoned(ticket.arrival)
            self.never_answered(ticket)

    def never_answered(self, ticket: Ticket) -> None:
        """Hung up, or still waiting at the end, before anybody answered: it waited for a first answer."""
        if ticket.counted and ticket.answered_at is None:
            self.first_response[_WAITED] = self.first_response[_WAITED] + 1

    def busy_span(self, role: str, start: float, until: float, off_shift: float = 0.0) -> None:
        """``role`` was busy from ``start`` to ``until`` (after the warm-up), ``off_shift`` minutes of
        it after the staff member's shift ended (overtime)."""
        self.busy[role] = self.busy[role] + (until - start)
        self.services[role] = self.services[role] + 1
        if off_shift:
            self.overtime[role] = self.overtime[role] + off_shift
        i = int(start * self._per_minute)
        if not off_shift and i == int(until * self._per_minute) and i < self._last:
            self._busy_by_interval[role][i] += until - start  # the usual case: within one interval
        else:
            self.intervals.busy_span(role, start, until, off_shift)

    def unfinished_span(self, role: str, start: float, until: float, off_shift: float = 0.0) -> None:
        """A service still under way when the episode ended: its minutes are busy time, but it is no
        completed service. Mean handle time is then busy minutes per *completed* service, the
        censoring-aware estimate (exact in expectation for exponential handle times): counting a cut-off
        service as a whole one biases the mean low by the share of services cut off at the end."""
        self.busy_span(role, start, until, off_shift)
        self.services[role] = self.services[role] - 1
        self.unfinished[role] = self.unfinished[role] + 1

    # --- results ----------------------------------------------------------------------------------
    def total(self, name: str) -> int:
        return sum(self.counts[name])

    def summary(self) -> dict[str, float]:
        """Flat headline KPIs (see :data:`KPI_DEFINITIONS`)."""
        t = self.total
        offered, answered = t("offered"), t("answered")
        closed_first = t("first_contact_closed")
        sla_total = t("sla_met") + t("sla_breached")
        queued = t("queued")
        _, first_answered, first_in_threshold, first_waited, first_wait_sum, _ = self.first_response
        out: dict[str, float] = {
            "offered": offered,
            "answered": answered,
            "resolved": t("resolved"),
            "abandoned": t("abandoned"),
            "closed_unresolved": t("closed_unresolved"),
            "escalated": t("escalated"),
            "reopened": t("reopened"),
            "in_system_at_end": t("in_system_at_end"),
            "service_level": _ratio(t("answered_in_threshold"), queued),
            "p_wait": _ratio(t("waited"), queued),
            "asa_minutes": _ratio(sum(self.answered_wait), answered),
            "wait_p50_minutes": self.wait_percentile(0.5),
            "wait_p90_minutes": self.wait_percentile(0.9),
            "wait_p99_minutes": self.wait_percentile(0.99),
            "service_level_first_response": _ratio(first_in_threshold, offered),
            "p_wait_first_response": _ratio(first_waited, offered),
            "asa_minutes_first_response": _ratio(first_wait_sum, first_answered),
            "abandonment_rate": _ratio(t("abandoned"), offered),
            "resolution_rate": _ratio(t("resolved"), offered),
            "first_contact_resolution": _ratio(t("first_contact_resolved"), closed_first),
            "escalation_rate": _ratio(t("escalated"), offered),
            "sla_attainment": _ratio(t("sla_met"), sla_total),
        }
        for queue, (q_offered, q_answered, q_in, q_waited, q_wait_sum, q_gone) in self.per_queue.items():
            out[f"service_level_{queue}"] = _ratio(q_in, q_offered)
            out[f"p_wait_{queue}"] = _ratio(q_waited, q_offered)
            out[f"asa_minutes_{queue}"] = _ratio(q_wait_sum, q_answered)
            out[f"abandonment_rate_{queue}"] = _ratio(q_gone, q_offered)
        for role in ROLES:
            out[f"offered_load_{role}"] = self.offered_load(role)
            # busy <= available + overtime exactly; sums of float minutes may overshoot by an ulp.
            occupancy = _ratio(self.busy[role], self.available[role] + self.overtime[role])
            out[f"occupancy_{role}"] = occupancy if occupancy <= 1.0 else 1.0 if occupancy > 1.0 else math.nan
        triaged = self.triage["triaged"]
        out["triage_accuracy"] = _ratio(self.triage["category_right"], triaged)
        out["triage_priority_accuracy"] = _ratio(self.triage["priority_right"], triaged)
        out["triage_routing_accuracy"] = _ratio(self.triage["route_right"], triaged)
        out["reply_score_mean"] = _ratio(self.replies["score_sum"], self.replies["graded"])
        out["sentiment_mean"] = _ratio(self.mood["sentiment_sum"], self.mood["left"])
        out["upset_rate"] = _ratio(self.mood["upset"], self.mood["left"])
        for role in ROLES:
            out[f"handled_minutes_{role}"] = self.busy[role]
            out[f"paid_minutes_{role}"] = self.available[role] + self.overtime[role]
        out.update(self.damages)
        out.update(self.extra)
        return out

    def offered_load(self, role: str) -> float:
        """Erlangs offered to ``role``: its mean busy time per service x entries into its queue, per
        measured minute. Unlike busy time (the *carried* load), it does not shrink when staff are too
        few to serve everybody or customers hang up first, so it sizes staffing from any start."""
        entries, services = self.entries[role], self.services[role] or self.unfinished[role]
        if not services:
            return 0.0 if not entries else math.nan
        return self.busy[role] / services * entries / self.window_minutes

    def breakdown(self) -> dict[str, dict[str, dict[str, int | float]]]:
        """Counts and rates by priority, tier and category."""
        out: dict[str, dict[str, dict[str, int | float]]] = {}
        for dim, values in (("priority", PRIORITIES), ("tier", TIERS), ("category", CATEGORIES)):
            out[dim] = {}
            for index, value in enumerate(values):
                cells = [c for c in range(N_CELLS) if _cell_index(c, dim) == index]
                row: dict[str, int | float] = {name: sum(self.counts[name][c] for c in cells) for name in COUNTS}
                answered = row["answered"]
                row["service_level"] = _ratio(row["answered_in_threshold"], row["queued"])
                row["asa_minutes"] = _ratio(sum(self.answered_wait[c] for c in cells), answered)
                row["abandonment_rate"] = _ratio(row["abandoned"], row["offered"])
                row["sla_attainment"] = _ratio(row["sla_met"], row["sla_met"] + row["sla_breached"])
                out[dim][value] = row
        return out

    def wait_percentile(self, q: float) -> float:
        """Percentile of the wait to answer (answered contacts), interpolated within 0.05-minute bins."""
        total = sum(self.wait_hist) + self.zero_waits
        if total == 0:
            return math.nan
        target = q * total
        if target <= self.zero_waits:
            return 0.0
        running = self.zero_waits
        for index, count in enumerate(self.wait_hist):
            if count and running + count >= target:
                return (index + (target - running) / count) * BIN_MINUTES
            running += count
        return N_BINS * BIN_MINUTES


def _cell_index(cell: int, dim: str) -> int:
    n_cat, n_tier = len(CATEGORIES), len(TIERS)
    if dim == "category":
        return cell % n_cat
    if dim == "tier":
        return (cell // n_cat) % n_tier
    return cell // (n_cat * n_tier)


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def kpi_definitions(headline_queue: str | None = None, threshold_minutes: float | None = None) -> dict[str, str]:
    """One line per KPI: what it counts, over which queue, against which threshold.

    Every table of KPIs prints these (the CLI does), so a reader knows which queue a service level
    measures. ``headline_queue`` is :attr:`csr_marl.sim.ContactCenter.headline_queue` (None: the rule
    that picks it, for tables over several scenarios).
    """
    within = "the scenario's threshold" if threshold_minutes is None else f"{threshold_minutes:g} min"
    head = (
        f"the {headline_queue} queue" if headline_queue
        else "the headline queue (the resolver queue where resolvers are staffed, else the queue contacts enter first)"
    )
    first_visit = "(first visit of each contact; wait from entering the queue to being taken by its role)"
    defs = {
        "offered": "contacts that arrived after the warm-up (a returning customer is a new contact)",
        "answered": f"contacts taken from {head} by its role",
        "service_level": f"contacts answered from {head} within {within} / contacts that entered it {first_visit}",
        "p_wait": f"contacts that waited in {head} (answered after a wait, abandoned, or still waiting at the end) / contacts that entered it",
        "asa_minutes": f"mean wait in {head}, over contacts answered from it",
        "wait_p50_minutes": f"median wait in {head} of answered contacts (p90, p99 likewise)",
        "service_level_first_response": f"contacts first answered by anybody within {within} of arriving / offered",
        "p_wait_first_response": "contacts that waited for their first answer (or abandoned or were unanswered at the end) / offered",
        "asa_minutes_first_response": "mean wait from arrival to the first answer by anybody, over answered contacts",
        "abandonment_rate": "contacts whose customer hung up in any queue / offered (each contact once)",
        "resolution_rate": "contacts resolved / offered",
        "first_contact_resolution": "first contacts resolved / first contacts closed (resolved or not)",
        "escalation_rate": "contacts sent to the escalation desk at least once / offered",
        "sla_attainment": "contacts resolved within their priority's SLA / contacts whose SLA outcome is known",
        "reply_score_mean": "mean grade (0.0-0.5) of the replies that closed contacts (respond_user; the rubric of csr_marl.sim.responses or a judge)",
        "sentiment_mean": "mean customer sentiment (-1 upset .. 1 pleased) when contacts left, closed or abandoned (customers.sentiment; NaN when off)",
        "upset_rate": "contacts whose customer left upset (sentiment below customers.sentiment.upset_below) / contacts that left (NaN when off)",
        "offered_load_<role>": "Erlangs of work offered to the role: busy staff-minutes per completed service x entries into its queue / measured minutes (not the carried load: it does not shrink when staff are too few)",
        "triage_accuracy": "triaged contacts whose category the triage decision got right / triaged contacts (priority and routing likewise)",
        "team_return": "RL: the team's summed reward over the episode (every reward component)",
        "illegal_actions": "RL environments only: actions the mask forbade (each replaced by a random legal action)",
        "illegal_action_share": "RL environments only: illegal actions / decisions answered by the agents",
        "occupancy_<role>": "busy staff-minutes / (on-shift staff-minutes + minutes spent finishing a ticket off shift), after the warm-up",
        "handled_minutes_<role>": "busy staff-minutes of the role (a ticket in hand), after the warm-up: the handled time the manager's score pays for",
        "paid_minutes_<role>": "on-shift staff-minutes of the role plus minutes spent finishing a ticket off shift, after the warm-up",
        "collateral_damage": "refunds a contact was not owed",
        "wrong_specialist_work": "specialist tools the escalation desk used on contacts that did not need them",
        "manager_net": "manager_score less the cost of rostered staff time nobody used (idle on shift): the figure to compare staffing plans by",
        "manager_score": "what the day earned the center by the scenario's manager: rates: resolutions' value less handled staff time, SLA breaches, abandonment and waiting (by priority x tier) and damage (docs: the manager's score)",
    }
    for queue in QUEUES:
        defs[f"service_level_{queue}"] = f"as service_level, for the {queue} queue"
        defs[f"p_wait_{queue}"] = f"as p_wait, for the {queue} queue"
        defs[f"asa_minutes_{queue}"] = f"as asa_minutes, for the {queue} queue"
        defs[f"abandonment_rate_{queue}"] = f"contacts that hung up while waiting (unanswered) in the {queue} queue / contacts that entered it"
    return defs


KPI_DEFINITIONS: dict[str, str] = kpi_definitions()


def scenario_headline_queue(scenario: Scenario) -> str:
    """:func:`headline_queue_of` for a scenario's peak staffing."""
    return headline_queue_of({role: scenario.staffing.peak(role) for role in ROLES})


def headline_queue_of(staffed_roles: dict[str, int]) -> str:
    """The queue the headline waits measure: the resolvers' when staffed, else the entry queue."""
    if staffed_roles.get("resolver", 0) > 0:
        return "resolver"
    return next(role for role in QUEUES if staffed_roles.get(role, 0) > 0)


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file under the process umask (``mkstemp`` makes 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def naming_file(error: OSError, path: str | Path | None) -> OSError:
    """``error`` saying which file, when it names none (``ENOSPC`` from a write names none).

    The path goes into the message (``"contacts.csv: No space left on device"``), not only into
    ``filename``: SimPy re-raises a process's exception from its ``args``, which drop ``filename``.
    """
    if error.filename is not None or path is None:
        return error
    return type(error)(error.errno, f"{path}: {error.strerror or error}")


class TicketLog:
    """Opt-in per-contact records, kept in memory or streamed to a CSV / JSONL file."""

    FIELDS: ClassVar[tuple[str, ...]] = (
        "ticket_id", "contact", "arrival", "tier", "category", "priority", "declared_category",
        "declared_priority", "assigned_category", "assigned_priority", "template", "outcome",
        "answered_at", "wait", "end", "escalated", "steps",
    )

    SUFFIXES: ClassVar[tuple[str, ...]] = (".csv", ".jsonl", ".ndjson")

    def __init__(self, target: str | Path | None) -> None:
        """Records in memory (``target=None``), or streamed to a file that appears whole at the end.

        The file is written under a temporary name beside ``target`` and renamed onto it when the
        episode closes the log, so a run that fails never truncates or half-writes ``target``.
        """
        self.records: list[dict[str, Any]] | None = [] if target is None else None
        self._file: TextIO | None = None
        self._csv: Any = None
        self._target: Path | None = None
        self._temporary: Path | None = None
        if target is not None:
            path = Path(target)
            if path.suffix not in self.SUFFIXES:
                raise ValueError(f"ticket log: use a .csv or .jsonl path, got {path.name!r}")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.fchmod(fd, new_file_mode())  # the log is an ordinary output file, not a secret
            self._target, self._temporary = path, Path(name)
            self._file = os.fdopen(fd, "w", encoding="utf-8", newline="")
            if path.suffix == ".csv":
                self._csv = csv.DictWriter(self._file, fieldnames=self.FIELDS)
                self._csv.writeheader()

    def write(self, ticket: Ticket, outcome: str, end: float) -> None:
        record = {
            "ticket_id": ticket.id, "contact": ticket.contact, "arrival": round(ticket.arrival, 6),
            "tier": ticket.tier, "category": ticket.true_category, "priority": ticket.true_priority,
            "declared_category": ticket.declared_category,
            "declared_priority": ticket.declared_priority,
            "assigned_category": ticket.assigned_category,
            "assigned_priority": ticket.assigned_priority, "template": ticket.template.id,
            "outcome": outcome,
            "answered_at": None if ticket.answered_at is None else round(ticket.answered_at, 6),
            "wait": None if ticket.answered_at is None else round(ticket.answered_at - ticket.arrival, 6),
            "end": round(end, 6), "escalated": ticket.escalated, "steps": " ".join(ticket.done),
        }
        if self.records is not None:
            self.records.append(record)
            return
        try:
            if self._csv is not None:
                self._csv.writerow(record)
            else:
                assert self._file is not None
                self._file.write(json.dumps(record) + "\n")
        except OSError as error:  # a full disk, a file size limit: say which file
            raise naming_file(error, self._target) from None

    def close(self) -> None:
        """Finish the file: it replaces the target in one rename."""
        if self._file is not None:
            file, self._file = self._file, None
            assert self._temporary is not None and self._target is not None
            try:
                file.close()
                os.replace(self._temporary, self._target)
            except OSError as error:
                self._temporary.unlink(missing_ok=True)
                raise naming_file(error, self._target) from None

    def discard(self) -> None:
        """Drop an unfinished file (the run failed): the target is left as it was."""
        if self._file is not None:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):  # the buffer may not fit either (a full disk)
                file.close()
            assert self._temporary is not None
            self._temporary.unlink(missing_ok=True)
