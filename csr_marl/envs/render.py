"""The floor as text (render mode ``ansi``): clock, queues, staff and running KPIs."""

from __future__ import annotations

from collections.abc import Collection

from ..config.domain import ROLES
from ..sim.center import ContactCenter
from ..sim.decisions import Decision
from ..sim.tickets import Ticket

SHOWN_PER_QUEUE = 6


def clock(minute: float) -> str:
    """Minutes since the start of the shift as ``h:mm``."""
    whole = int(minute)
    return f"{whole // 60}:{whole % 60:02d}"


def _ticket(ticket: Ticket, now: float) -> str:
    return f"#{ticket.id} {ticket.assigned_priority}/{ticket.tier} {now - ticket.arrival:.1f}m"


def floor_text(center: ContactCenter, due: Collection[Decision], title: str) -> str:
    now = center.now
    lines = [f"{title} - {center.scenario.name} - {clock(now)} ({now:.1f} of {center.horizon:g} min)"]
    lines.append("queues")
    for role in ROLES:
        if center.peak[role] == 0 and center.queues[role].size == 0:
            continue
        queue = center.queues[role]
        shown = queue.visible(SHOWN_PER_QUEUE)
        more = queue.size - len(shown)
        waiting = ", ".join(_ticket(t, now) for t in shown) + (f", +{more} more" if more > 0 else "")
        lines.append(f"  {role:<10} {queue.size:>5} waiting  {waiting}")
    lines.append("staff")
    for staff in center.staff:
        doing = staff.activity if staff.on_duty or staff.ticket is not None else "off shift"
        ticket = f"  {_ticket(staff.ticket, now)}" if staff.ticket is not None else ""
        mark = "  <- decision due" if any(d.staff is staff for d in due) else ""
        lines.append(f"  {staff.name:<14} {doing:<20}{ticket}{mark}")
    kpis, flow = center.kpis, center.flow
    offered, answered = kpis.total("offered"), kpis.total("answered")
    in_threshold = kpis.total("answered_in_threshold")
    service = f"{in_threshold / offered:.0%}" if offered else "-"
    lines.append(
        f"kpis  offered {offered}  answered {answered}  resolved {flow['resolved']}  "
        f"abandoned {flow['abandoned']}  closed unresolved {flow['closed_unresolved']}  "
        f"in system {center.open_tickets}  service level {service}  "
        f"team return {center.rewards.team_return:+.2f}"
    )
    return "\n".join(lines)
