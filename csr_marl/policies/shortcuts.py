"""Scripted teams that take a shortcut: the heuristic team with one habit that a manager would not pay for.

Each is the fair ``heuristic`` everywhere but where its name says. They exist to try the team reward:
a reward a learner can win with one of these habits teaches the habit (benchmarks/team_suite.py).

- ``route_all_to_desk``: triage sends every ticket to the escalation desk, which sends back what it
  need not handle;
- ``desk_bounce``: the desk sends every ticket back to the resolvers untouched (they escalate it again
  when it needs a specialist, until the transfer cap);
- ``lowest_priority_first``, ``lowest_tier_first``: staff take the visible ticket of the lowest priority,
  or of the lowest customer tier, first;
- ``reply_at_once``: resolvers and the desk reply as soon as they take a ticket, with no work done;
- ``stall``: resolvers repeat the order lookup until the action cap, then finish as the heuristic can.

``newest_first`` (staff take the newest visible ticket) is a queue order, as ``fifo`` is, not a
shortcut: the queue already shows the most urgent tickets first, and on standard_day it scores as the
heuristic does on the team return and on the manager's score alike.
"""

from __future__ import annotations

from ..config.domain import PRIORITIES, TIERS
from ..sim.decisions import Decision
from .base import register
from .heuristic import HeuristicPolicy

_LEVEL = {p: i for i, p in enumerate(PRIORITIES)}
_TIER = {t: i for i, t in enumerate(TIERS)}


@register("route_all_to_desk")
class RouteAllToDeskPolicy(HeuristicPolicy):
    """Triage routes every ticket to the escalation desk; the desk returns what needs no specialist."""

    def triage(self, decision: Decision) -> int:
        action = super().triage(decision)
        return action | 1 if self.has_desk else action  # route bit: 1 = escalation


@register("desk_bounce")
class DeskBouncePolicy(HeuristicPolicy):
    """The desk sends every ticket back to the resolvers without working it (while it may)."""

    def next_tool(self, decision: Decision) -> str:
        if decision.role == "escalation" and decision.tool_action("return_to_resolver") in decision.legal:
            return "return_to_resolver"
        return super().next_tool(decision)


@register("lowest_priority_first")
class LowestPriorityFirstPolicy(HeuristicPolicy):
    """Staff take the visible ticket the triage labelled least urgent (the newest of those)."""

    def pick(self, decision: Decision) -> int:
        keys = [(_LEVEL.get(t.assigned_priority, 0), -t.arrival) for t in decision.slots]
        return keys.index(min(keys))


@register("newest_first")
class NewestFirstPolicy(HeuristicPolicy):
    """Staff take the visible ticket that arrived last."""

    def pick(self, decision: Decision) -> int:
        arrivals = [t.arrival for t in decision.slots]
        return arrivals.index(max(arrivals))


@register("lowest_tier_first")
class LowestTierFirstPolicy(HeuristicPolicy):
    """Staff take the visible ticket of the lowest customer tier (basic before enterprise)."""

    def pick(self, decision: Decision) -> int:
        tiers = [_TIER[t.tier] for t in decision.slots]
        return tiers.index(min(tiers))


@register("reply_at_once")
class ReplyAtOncePolicy(HeuristicPolicy):
    """Resolvers and the desk reply at once, with none of the work done."""

    def next_tool(self, decision: Decision) -> str:
        return "respond_user"


@register("stall")
class StallPolicy(HeuristicPolicy):
    """Resolvers repeat the order lookup while they may, then finish as the heuristic would."""

    def next_tool(self, decision: Decision) -> str:
        if decision.role == "resolver" and decision.tool_action("check_order_status") in decision.legal:
            return "check_order_status"
        return super().next_tool(decision)


SHORTCUTS: tuple[str, ...] = (
    "route_all_to_desk", "desk_bounce", "lowest_priority_first", "lowest_tier_first", "reply_at_once", "stall",
    "escalate_all",
)

__all__ = [
    "SHORTCUTS", "DeskBouncePolicy", "LowestPriorityFirstPolicy", "LowestTierFirstPolicy", "NewestFirstPolicy",
    "ReplyAtOncePolicy", "RouteAllToDeskPolicy", "StallPolicy",
]
