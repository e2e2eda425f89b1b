"""Streaming KPI accumulators (memory flat in the number of tickets) and the opt-in ticket log.

Counts are kept per cell (priority x tier x category) so every breakdown comes from the same numbers.
Waits go into a fixed-width histogram for percentiles. Only contacts that arrive after the warm-up count.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, TextIO

from ..config.domain import CATEGORIES, PRIORITIES, ROLES, TIERS
from .tickets import N_CELLS, Ticket

COUNTS: tuple[str, ...] = (
    "offered", "answered", "answered_in_threshold", "waited", "resolved", "abandoned",
    "closed_unresolved", "escalated", "reopened", "first_contact_resolved", "first_contact_closed",
    "sla_met", "sla_breached", "in_system_at_end",
)
BIN_MINUTES = 0.05
N_BINS = 24_000  # 1,200 minutes; longer waits land in the last bin


class KpiAccumulator:
    """Counts, wait sums and histograms, updated as events happen."""

    def __init__(self, threshold_minutes: float, roles_available: dict[str, float]) -> None:
        self.threshold = threshold_minutes
        self.counts: dict[str, list[int]] = {name: [0] * N_CELLS for name in COUNTS}
        self.answered_wait = [0.0] * N_CELLS
        self.abandoned_wait = 0.0
        self.wait_hist = [0] * (N_BINS + 1)  # positive waits only
        self.zero_waits = 0
        self.busy = {role: 0.0 for role in ROLES}
        self.available = roles_available
        self.triage = {"triaged": 0, "category_right": 0, "priority_right": 0, "route_right": 0}
        self.queue_stats: dict[str, list[float]] = {}  # name -> [left, waited>0, wait sum, abandoned]

    # --- events -----------------------------------------------------------------------------------
    def count(self, name: str, ticket: Ticket) -> None:
        if ticket.counted:
            self.counts[name][ticket.cell] += 1

    def closed(self, ticket: Ticket, resolved: bool, on_time: bool) -> None:
        """A counted contact was closed by a response (resolved or not)."""
        cell, c = ticket.cell, self.counts
        c["resolved" if resolved else "closed_unresolved"][cell] += 1
        c["sla_met" if on_time else "sla_breached"][cell] += 1
        if ticket.contact == 0:
            c["first_contact_closed"][cell] += 1
            if resolved:
                c["first_contact_resolved"][cell] += 1

    def answered(self, ticket: Ticket, wait: float) -> None:
        if not ticket.counted:
            return
        cell = ticket.cell
        c = self.counts
        c["answered"][cell] += 1
        self.answered_wait[cell] += wait
        if wait > 0:
            c["waited"][cell] += 1
        if wait <= self.threshold:
            c["answered_in_threshold"][cell] += 1
        if wait > 0:
            self.wait_hist[min(int(wait / BIN_MINUTES), N_BINS)] += 1
        else:
            self.zero_waits += 1

    def abandoned(self, ticket: Ticket, wait: float) -> None:
        if ticket.counted:
            self.counts["abandoned"][ticket.cell] += 1
            self.counts["waited"][ticket.cell] += 1
            self.abandoned_wait += wait

    def queue_left(self, queue: str, ticket: Ticket, waited: float, abandoned: bool = False) -> None:
        if ticket.counted:
            stats = self.queue_stats.setdefault(queue, [0, 0, 0.0, 0])
            stats[0] += 1
            stats[1] += waited > 0
            stats[2] += waited
            stats[3] += abandoned

    # --- results ----------------------------------------------------------------------------------
    def total(self, name: str) -> int:
        return sum(self.counts[name])

    def summary(self) -> dict[str, float]:
        """Flat headline KPIs (see :data:`KPI_DEFINITIONS`)."""
        t = self.total
        offered, answered = t("offered"), t("answered")
        closed_first = t("first_contact_closed")
        sla_total = t("sla_met") + t("sla_breached")
        out: dict[str, float] = {
            "offered": offered,
            "answered": answered,
            "resolved": t("resolved"),
            "abandoned": t("abandoned"),
            "closed_unresolved": t("closed_unresolved"),
            "escalated": t("escalated"),
            "reopened": t("reopened"),
            "in_system_at_end": t("in_system_at_end"),
            "service_level": _ratio(t("answered_in_threshold"), offered),
            "p_wait": _ratio(t("waited"), offered),
            "asa_minutes": _ratio(sum(self.answered_wait), answered),
            "abandonment_rate": _ratio(t("abandoned"), offered),
            "resolution_rate": _ratio(t("resolved"), offered),
            "first_contact_resolution": _ratio(t("first_contact_resolved"), closed_first),
            "escalation_rate": _ratio(t("escalated"), answered),
            "sla_attainment": _ratio(t("sla_met"), sla_total),
            "wait_p50_minutes": self.wait_percentile(0.5),
            "wait_p90_minutes": self.wait_percentile(0.9),
            "wait_p99_minutes": self.wait_percentile(0.99),
        }
        for role in ROLES:
            out[f"occupancy_{role}"] = _ratio(self.busy[role], self.available[role])
        triaged = self.triage["triaged"]
        out["triage_accuracy"] = _ratio(self.triage["category_right"], triaged)
        out["triage_priority_accuracy"] = _ratio(self.triage["priority_right"], triaged)
        out["triage_routing_accuracy"] = _ratio(self.triage["route_right"], triaged)
        for queue, (entries, waited, total_wait, _abandoned) in sorted(self.queue_stats.items()):
            out[f"{queue}_queue_p_wait"] = _ratio(waited, entries)
            out[f"{queue}_queue_mean_wait_minutes"] = _ratio(total_wait, entries)
        return out

    def breakdown(self) -> dict[str, dict[str, dict[str, float]]]:
        """Counts and rates by priority, tier and category."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for dim, values in (("priority", PRIORITIES), ("tier", TIERS), ("category", CATEGORIES)):
            out[dim] = {}
            for index, value in enumerate(values):
                cells = [c for c in range(N_CELLS) if _cell_index(c, dim) == index]
                row = {name: sum(self.counts[name][c] for c in cells) for name in COUNTS}
                answered = row["answered"]
                row["service_level"] = _ratio(row["answered_in_threshold"], row["offered"])
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


KPI_DEFINITIONS: dict[str, str] = {
    "service_level": "contacts answered (service started by any staff) within the threshold / offered",
    "p_wait": "offered contacts that waited at all (answered after a wait, or abandoned) / offered",
    "asa_minutes": "mean wait to answer, over answered contacts only",
    "abandonment_rate": "abandoned / offered",
    "first_contact_resolution": "first contacts resolved / first contacts closed (resolved or not)",
    "escalation_rate": "contacts escalated to the desk / answered",
    "sla_attainment": "resolved within the priority's SLA / contacts whose SLA outcome is known",
    "occupancy_<role>": "busy staff-minutes / on-shift staff-minutes after the warm-up",
}


class TicketLog:
    """Opt-in per-contact records, kept in memory or streamed to a CSV / JSONL file."""

    FIELDS = (
        "ticket_id", "contact", "arrival", "tier", "category", "priority", "declared_category",
        "declared_priority", "assigned_category", "assigned_priority", "template", "outcome",
        "answered_at", "wait", "end", "escalated", "steps",
    )

    def __init__(self, target: str | Path | None) -> None:
        self.records: list[dict[str, Any]] | None = [] if target is None else None
        self._file: TextIO | None = None
        self._csv: Any = None
        if target is not None:
            path = Path(target)
            self._file = open(path, "w", encoding="utf-8", newline="")
            if path.suffix == ".csv":
                self._csv = csv.DictWriter(self._file, fieldnames=self.FIELDS)
                self._csv.writeheader()
            elif path.suffix not in (".jsonl", ".ndjson"):
                self._file.close()
                raise ValueError(f"ticket log: use a .csv or .jsonl path, got {path.name!r}")

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
        elif self._csv is not None:
            self._csv.writerow(record)
        else:
            assert self._file is not None
            self._file.write(json.dumps(record) + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
