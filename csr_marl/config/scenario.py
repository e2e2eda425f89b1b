"""The scenario: everything that describes one contact center, as frozen pydantic models.

A scenario plus a seed fully determines a run, so scenarios are immutable and picklable (they travel to
worker processes). Field names are the YAML keys (docs/concepts/model.md shows a scenario file).
"""

from __future__ import annotations

import bisect
import warnings
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .distributions import Distribution, Exponential, Lognormal
from .domain import ALL_TOOLS, PRIORITIES, ROLES, TIERS


class ScenarioWarning(UserWarning):
    """A scenario that is valid but probably not what was meant (e.g. a shift after the horizon)."""


#: The most tickets one run may generate (about an hour of simulation on one core): more is refused at
#: validation rather than left to run for days.
MAX_EXPECTED_ARRIVALS = 20_000_000
#: The most staff one role may have at any time: every staff member is an agent with its own slot in
#: the environments, and a billion of them would exhaust memory before the first ticket.
MAX_HEADCOUNT = 1_000
#: The most entries one schedule list may hold (arrivals.profile, arrivals.surges, staffing.shifts):
#: each is built in n log n, and a day with this many of each simulates in seconds.
MAX_SCHEDULE_ENTRIES = 10_000
#: Up to this many overlapping surges multiply a rate one by one, in their order (see Arrivals.segments).
EXACT_OVERLAP = 16


class _Frozen(BaseModel):
    # allow_inf_nan=False: a NaN or infinite number anywhere (a rate, a weight, a horizon) is refused
    # with the field's name, instead of hanging the run or poisoning every KPI with NaN.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Surge(_Frozen):
    """Arrivals multiplied by ``multiplier`` during [start_minute, end_minute)."""

    start_minute: float = Field(ge=0)
    end_minute: float = Field(gt=0)
    multiplier: float = Field(gt=0)

    @model_validator(mode="after")
    def _order(self) -> "Surge":
        if self.end_minute <= self.start_minute:
            raise ValueError(
                f"end_minute ({self.end_minute}) must be after start_minute ({self.start_minute})"
            )
        return self


class Arrivals(_Frozen):
    """Exactly one of a constant rate, a piecewise time-of-day profile, or a CSV trace."""

    rate_per_hour: float | None = Field(default=None, gt=0)
    profile: tuple[tuple[float, float], ...] | None = Field(default=None, max_length=MAX_SCHEDULE_ENTRIES)
    surges: tuple[Surge, ...] = Field(default=(), max_length=MAX_SCHEDULE_ENTRIES)
    trace: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> "Arrivals":
        given = [k for k in ("rate_per_hour", "profile", "trace") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of rate_per_hour, profile or trace "
                f"(got {', '.join(given) if given else 'none'})"
            )
        if self.profile is not None:
            if not self.profile:
                raise ValueError("profile: needs at least one [start_minute, rate_per_hour] pair")
            if self.profile[0][0] != 0:
                raise ValueError(f"profile: the first period must start at minute 0, got {self.profile[0][0]}")
            for i, (start, rate) in enumerate(self.profile):
                if rate < 0:
                    raise ValueError(f"profile[{i}]: rate_per_hour must be >= 0, got {rate}")
                if i and start <= self.profile[i - 1][0]:
                    raise ValueError(
                        f"profile[{i}]: start_minute {start} is not after {self.profile[i - 1][0]}"
                    )
            if max(rate for _, rate in self.profile) <= 0:
                raise ValueError("profile: at least one period needs a rate above 0")
        if self.trace is not None and self.surges:
            raise ValueError("surges cannot be combined with a replayed trace")
        return self

    def segments(self, horizon: float) -> list[tuple[float, float, float]]:
        """``(start, end, rate_per_hour)`` of each constant-rate piece of ``[0, horizon)`` (no trace).

        One sweep over the sorted edges, so many surges cost ``n log n``, not ``n`` squared. A piece's
        rate is the base rate times its active surges' multipliers, in the surges' order (exactly the
        same floats as multiplying one by one) while at most :data:`EXACT_OVERLAP` overlap; past that, a
        running product.
        """
        if self.profile is not None:
            steps = [(float(start), float(rate)) for start, rate in self.profile]
        else:
            steps = [(0.0, float(self.rate_per_hour or 0.0))]
        edges = {0.0, float(horizon)}
        edges.update(start for start, _ in steps if start < horizon)
        starting: dict[float, list[int]] = {}
        ending: dict[float, list[int]] = {}
        for i, surge in enumerate(self.surges):
            edges.update(t for t in (surge.start_minute, surge.end_minute) if t < horizon)
            starting.setdefault(float(surge.start_minute), []).append(i)
            ending.setdefault(float(surge.end_minute), []).append(i)
        events = sorted(set(starting) | set(ending))
        cuts = sorted(edges)
        active: set[int] = set()
        running = 1.0
        pieces: list[tuple[float, float, float]] = []
        step = event = 0
        for start, end in zip(cuts, cuts[1:]):
            while step + 1 < len(steps) and steps[step + 1][0] <= start:
                step += 1
            while event < len(events) and events[event] <= start:  # surges are active on [start, end)
                for i in ending.get(events[event], ()):
                    active.discard(i)
                    running /= self.surges[i].multiplier
                for i in starting.get(events[event], ()):
                    if self.surges[i].end_minute > events[event]:
                        active.add(i)
                        running *= self.surges[i].multiplier
                event += 1
            rate = steps[step][1]
            if not active:
                running = 1.0  # no drift carried from one overlap to the next
            elif len(active) <= EXACT_OVERLAP:
                for i in sorted(active):
                    rate *= self.surges[i].multiplier
            else:
                rate *= running
            pieces.append((start, end, rate))
        return pieces

    def expected_count(self, horizon: float) -> float:
        """Mean number of arrivals in ``[0, horizon)`` from the rates (0 for a trace)."""
        if self.trace is not None:
            return 0.0
        return sum((end - start) * rate / 60.0 for start, end, rate in self.segments(horizon))


class Reopen(_Frozen):
    """A customer whose ticket was closed unresolved comes back as a new contact."""

    probability: float = Field(default=0.8, ge=0, le=1)
    delay: Distribution = Exponential(dist="exponential", mean_minutes=60.0)
    max_returns: int = Field(default=1, ge=0)


class SelfReport(_Frozen):
    """How often the customer's own web-form category and urgency are right (used with no triage)."""

    category_accuracy: float = Field(default=0.75, ge=0, le=1)
    priority_accuracy: float = Field(default=0.5, ge=0, le=1)


class Sentiment(_Frozen):
    """How a customer's mood moves, and how it feeds back into the queueing model.

    Sentiment is a number in [-1, 1] per customer, 0 when the ticket is filed. It falls by
    ``wait_per_minute`` for every minute waited in any queue, by ``wasted_step`` for each tool step
    the ticket did not need, by ``repeated_question`` when the customer is asked again about a topic
    they already answered, by ``handover`` for every transfer between resolvers and the desk, and by
    ``unresolved`` when a response closes the ticket unresolved; the reply itself moves it by
    ``reply_weight * (grade / 0.5 - 0.5)`` (a perfect reply +reply_weight/2, an empty one the same
    down). A customer is *upset* below ``upset_below``.

    Feedback: whenever the customer enters a queue again (escalated, returned, or coming back as a
    reopened contact) their remaining patience is multiplied by ``exp(patience_elasticity * s)``
    (an upset customer hangs up sooner), and the chance that an unresolved customer comes back is
    ``reopen.probability * (1 - reopen_elasticity * s)``, clipped to [0, 1]. A first queue entry is
    never changed, so single-queue models keep their exact patience law. ``enabled: false`` turns
    sentiment off entirely (no tracking, no feedback): the validation presets do, to stay exact;
    elasticities of 0 track sentiment without feedback.
    """

    enabled: bool = True
    wait_per_minute: float = Field(default=0.01, ge=0)
    wasted_step: float = Field(default=0.05, ge=0)
    repeated_question: float = Field(default=0.15, ge=0)
    handover: float = Field(default=0.1, ge=0)
    unresolved: float = Field(default=0.3, ge=0)
    reply_weight: float = Field(default=0.6, ge=0)
    upset_below: float = Field(default=-0.3, ge=-1, le=1)
    patience_elasticity: float = Field(default=0.7, ge=0, le=5)
    reopen_elasticity: float = Field(default=0.5, ge=0, le=1)


class Customers(_Frozen):
    tier_mix: dict[str, float] = Field(
        default_factory=lambda: {"basic": 0.7, "premium": 0.2, "enterprise": 0.1}
    )
    patience: Distribution | None = Exponential(dist="exponential", mean_minutes=30.0)
    patience_factor: dict[str, float] = Field(default_factory=dict)
    reopen: Reopen = Reopen()
    self_report: SelfReport = SelfReport()
    sentiment: Sentiment = Sentiment()

    @model_validator(mode="after")
    def _mix(self) -> "Customers":
        for tier in list(self.tier_mix) + list(self.patience_factor):
            if tier not in TIERS:
                raise ValueError(f"unknown tier {tier!r} (expected one of {', '.join(TIERS)})")
        for tier, share in self.tier_mix.items():
            if share < 0:
                raise ValueError(f"tier_mix.{tier}: share must be >= 0, got {share}")
        total = sum(self.tier_mix.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"tier_mix: shares must sum to 1, got {total:g}")
        for tier, factor in self.patience_factor.items():
            if factor <= 0:
                raise ValueError(f"patience_factor.{tier}: must be > 0, got {factor}")
        return self


class TextNoise(_Frozen):
    """How far the text customers write strays from the bank's clean templates (``tickets.noise``).

    Real ticket streams are messy, so a keyword lookup cannot triage them perfectly. Each rate is a
    probability in [0, 1]:

    - ``typo_rate``: per word of four or more letters written by the template (never a slot value:
      ids, amounts, names and products stay intact; nor an all-capitals word such as a code), one typo:
      two adjacent letters swapped, a letter dropped, or a letter doubled;
    - ``misleading_subject``: per ticket, the subject line is that of a template of *another*
      category (from the scenario's own ``tickets.split``, so a train scenario never shows held-out
      text), its slots filled;
    - ``mixed_topic``: per ticket, a second issue from another category is appended ("Also, ...",
      "PS ..."): the body of one of its text variants, greeting and sign-off left out, again from the
      scenario's own split (the ticket's category stays that of the issue it opens with);
    - ``stated_labels``: per wrong web-form label (``declared_category`` or ``declared_priority``
      differs from the truth, see ``customers.self_report``), the text also says it in words
      ("This is a billing question.", "No rush on this.").

    The true priority is read from the clean text, before any noise; staff see the noisy text.
    ``enabled: false`` (or every rate 0) writes the clean text with no random draw at all: the
    validation presets do, to stay exact. Noise draws come from their own random stream, so turning
    it on or off changes no other draw.
    """

    enabled: bool = True
    typo_rate: float = Field(default=0.03, ge=0, le=1)
    misleading_subject: float = Field(default=0.10, ge=0, le=1)
    mixed_topic: float = Field(default=0.15, ge=0, le=1)
    stated_labels: float = Field(default=0.5, ge=0, le=1)

    @property
    def active(self) -> bool:
        """Whether any noise is written at all."""
        rates = (self.typo_rate, self.misleading_subject, self.mixed_topic, self.stated_labels)
        return self.enabled and any(rate > 0 for rate in rates)


class Tickets(_Frozen):
    """Where tickets come from: the bank, the side of its held-out split, and the text noise."""

    bank: str = "tickets/default.yaml"
    split: Literal["all", "train", "test"] = Field(
        default="all", description="which side of the bank's held-out split arrivals are drawn from"
    )
    templates: tuple[str, ...] | None = Field(
        default=None,
        description="draw only these templates of the bank (ids such as shipping.where_is_my_order), by "
        "their weights; None draws every template (a named task's narrow slice of the bank)",
    )
    noise: TextNoise = TextNoise()


class ShiftChange(_Frozen):
    """From ``at_minute`` on, the given roles have the given headcount (others unchanged)."""

    at_minute: float = Field(ge=0)
    triage: int | None = Field(default=None, ge=0, le=MAX_HEADCOUNT)
    resolver: int | None = Field(default=None, ge=0, le=MAX_HEADCOUNT)
    escalation: int | None = Field(default=None, ge=0, le=MAX_HEADCOUNT)


class Staffing(_Frozen):
    triage: int = Field(default=1, ge=0, le=MAX_HEADCOUNT)
    resolver: int = Field(default=4, ge=0, le=MAX_HEADCOUNT)
    escalation: int = Field(default=1, ge=0, le=MAX_HEADCOUNT)
    shifts: tuple[ShiftChange, ...] = Field(default=(), max_length=MAX_SCHEDULE_ENTRIES)

    @model_validator(mode="after")
    def _ordered(self) -> "Staffing":
        for i in range(1, len(self.shifts)):
            if self.shifts[i].at_minute <= self.shifts[i - 1].at_minute:
                raise ValueError(
                    f"shifts out of order: shifts[{i}].at_minute={self.shifts[i].at_minute} "
                    f"is not after shifts[{i - 1}].at_minute={self.shifts[i - 1].at_minute}"
                )
        return self

    def headcount_at(self, role: str, minute: float) -> int:
        """The role's headcount at ``minute`` (the last change at or before it), in log(shifts) time."""
        times, counts = self.timeline(role)
        return counts[bisect.bisect_right(times, minute) - 1] if times and minute >= times[0] else getattr(self, role)

    def timeline(self, role: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
        """``(minutes, headcounts)``: each shift change's minute and the role's headcount from then on."""
        return self._timelines[role]

    def changes_between(self, start: float, end: float) -> tuple[float, ...]:
        """The minutes of shift changes strictly inside ``(start, end)``, in order, in log(shifts) time."""
        times = self._change_minutes
        return times[bisect.bisect_right(times, start):bisect.bisect_left(times, end)]

    @cached_property
    def _change_minutes(self) -> tuple[float, ...]:
        return tuple(float(c.at_minute) for c in self.shifts)

    @cached_property
    def _timelines(self) -> dict[str, tuple[tuple[float, ...], tuple[int, ...]]]:
        lines = {}
        for role in ROLES:
            count, counts = getattr(self, role), []
            for change in self.shifts:
                value = getattr(change, role)
                count = count if value is None else value
                counts.append(count)
            lines[role] = (self._change_minutes, tuple(counts))
        return lines

    def peak(self, role: str) -> int:
        counts = [getattr(self, role)] + [
            getattr(c, role) for c in self.shifts if getattr(c, role) is not None
        ]
        return max(counts)


_DEFAULT_TOOL = Lognormal(dist="lognormal", mean_minutes=2.0, cv=0.6)


class HandleTimes(_Frozen):
    triage: Distribution = Lognormal(dist="lognormal", mean_minutes=1.0, cv=0.5)
    tools: dict[str, Distribution] = Field(default_factory=dict)
    default_tool: Distribution = _DEFAULT_TOOL
    escalation: dict[str, Distribution] = Field(
        default_factory=dict,
        description="overrides for tools performed at the escalation desk (e.g. respond_user)",
    )

    @model_validator(mode="after")
    def _known(self) -> "HandleTimes":
        for group in ("tools", "escalation"):
            for tool in getattr(self, group):
                if tool not in ALL_TOOLS:
                    raise ValueError(f"{group}: unknown tool {tool!r} (known: {', '.join(ALL_TOOLS)})")
        return self

    def for_tool(self, tool: str, at_escalation_desk: bool = False) -> Distribution:
        if at_escalation_desk and tool in self.escalation:
            return self.escalation[tool]
        return self.tools.get(tool, self.default_tool)


INTERVAL_CHOICES = (5, 10, 15, 20, 30, 60, 120)


class ServiceLevel(_Frozen):
    threshold_minutes: float = Field(default=1.0, ge=0, description="answered within this many minutes counts toward the service level; 0: answered without waiting (1 - P(wait))")
    interval_minutes: int = Field(default=30, description="width of the interval KPIs (15, 30 or 60 are usual)")

    @model_validator(mode="after")
    def _interval(self) -> "ServiceLevel":
        if self.interval_minutes not in INTERVAL_CHOICES:
            raise ValueError(
                f"interval_minutes: use one of {', '.join(map(str, INTERVAL_CHOICES))}, got {self.interval_minutes}"
            )
        return self


def _default_sla() -> dict[str, float]:
    return {"urgent": 15.0, "high": 60.0, "medium": 240.0, "low": 1440.0}


class Rewards(_Frozen):
    """Reward components. Positive numbers pay, negative ones cost."""

    mode: Literal["shared", "individual", "mixed"] = "shared"
    mixed_share: float = Field(default=0.5, ge=0, le=1, description="weight of the team part in mixed")
    classification_right: float = 0.2
    priority_right: float = 0.1
    priority_wrong_per_level: float = -0.05
    routing_right: float = 0.2
    routing_wrong: float = -0.2
    step_needed: float = 0.2
    step_wasted: float = -0.1
    labels_against_chance: bool = Field(
        default=True,
        description="triage's wrong category or route costs right x p / (1 - p), p the share of tickets "
        "the chosen label is right for, so a label chosen without reading earns nothing on average "
        "(false: a wrong category earns 0 and a wrong route routing_wrong)",
    )
    collateral_damage: float = Field(
        default=-0.3,
        description="a refund the case does not owe (csr_marl.sim.tickets.refund_verdict): it costs more "
        "than a missed step earns",
    )
    pricing: Literal["manager", "flat"] = Field(
        default="manager",
        description="manager: resolutions, waiting, abandonment, SLA breaches, staff time and damage are "
        "the manager's rates (the scenario's manager: block) x score_scale, so those components sum over "
        "a day to score_scale x the manager's score; flat: the seeds' fixed weights below (resolution, "
        "tier_weight, waiting_per_minute, abandonment, sla_breach, collateral_damage) and no staff time",
    )
    score_scale: float = Field(
        default=0.05, gt=0, description="reward points per unit of the manager's currency (pricing: manager)"
    )
    resolution: float = Field(default=0.5, description="pricing: flat: a resolution, x tier_weight")
    tier_weight: dict[str, float] = Field(
        default_factory=lambda: {"basic": 1.0, "premium": 1.5, "enterprise": 2.0}
    )
    waiting_per_minute: dict[str, float] = Field(
        default_factory=lambda: {"low": -0.001, "medium": -0.002, "high": -0.005, "urgent": -0.01}
    )
    abandonment: float = Field(default=-1.0, description="pricing: flat: an abandoned contact")
    sla_breach: float = Field(default=-0.5, description="pricing: flat: a contact closed or left past its SLA")
    response_quality: float = Field(
        default=1.0,
        description="weight of the reply's grade (0.0-0.5, csr_marl.sim.responses) paid to the agent "
        "whose respond_user closes a ticket",
    )
    illegal_action: float = Field(
        default=-0.1,
        description="what an action the mask forbids costs the agent (the environment then takes the "
        "decision's fallback; csr_marl.env(strict=True) raises instead)",
    )

    @model_validator(mode="after")
    def _keys(self) -> "Rewards":
        for tier in self.tier_weight:
            if tier not in TIERS:
                raise ValueError(f"tier_weight: unknown tier {tier!r}")
        for priority in self.waiting_per_minute:
            if priority not in PRIORITIES:
                raise ValueError(f"waiting_per_minute: unknown priority {priority!r}")
        return self


class Manager(_Frozen):
    """What a day of the center costs and earns, in ``currency`` (docs: the manager's score).

    A class of customer (priority x tier) weighs ``priority_weight[p] * tier_weight[t]``: SLA breaches,
    abandonment and waiting cost their base amount times that weight."""

    currency: str = Field(default="USD", min_length=1)
    staff_per_hour: dict[str, float] = Field(
        default_factory=lambda: {"triage": 32.0, "resolver": 32.0, "escalation": 64.0},
        description="fully loaded cost of an hour of handled work, per role",
    )
    resolution_value: dict[str, float] = Field(
        default_factory=lambda: {"basic": 20.0, "premium": 35.0, "enterprise": 60.0},
        description="what resolving a contact is worth, per tier",
    )
    priority_weight: dict[str, float] = Field(
        default_factory=lambda: {"low": 0.5, "medium": 1.0, "high": 2.0, "urgent": 4.0}
    )
    tier_weight: dict[str, float] = Field(default_factory=lambda: {"basic": 1.0, "premium": 2.0, "enterprise": 4.0})
    sla_breach: float = Field(default=5.0, ge=0, description="a contact closed unresolved or past its SLA, or left")
    abandonment: float = Field(default=20.0, ge=0, description="a customer who hung up waiting")
    waiting_per_hour: float = Field(default=6.0, ge=0, description="an hour a customer waits in any queue")
    collateral_damage: float = Field(default=60.0, ge=0, description="a refund the case does not owe")
    wrong_specialist_work: float = Field(
        default=25.0, ge=0, description="a specialist tool the case does not need (beyond its staff time)"
    )

    @model_validator(mode="after")
    def _keys(self) -> "Manager":
        for name, keys in (("staff_per_hour", ROLES), ("resolution_value", TIERS), ("priority_weight", PRIORITIES),
                           ("tier_weight", TIERS)):
            table = getattr(self, name)
            if set(table) != set(keys):
                raise ValueError(f"manager.{name}: needs exactly {', '.join(keys)}, got {', '.join(table) or 'none'}")
            if any(value < 0 for value in table.values()):
                raise ValueError(f"manager.{name}: rates must be >= 0")
        return self

    def class_weight(self, priority: str, tier: str) -> float:
        """How much a customer of this priority and tier counts against the base amounts."""
        return self.priority_weight[priority] * self.tier_weight[tier]


class Observation(_Frozen):
    queue_slots: int = Field(default=5, ge=1, le=64)
    text_features: int = Field(default=32, ge=4, le=4096)
    text_chars: tuple[int, int] | None = Field(
        default=None,
        description="also hash the character n-grams of each word (e.g. [2, 5]) beside the words, with "
        "sublinear counts: features that carry over to wordings never trained on; null: words only",
    )

    @model_validator(mode="after")
    def _chars(self) -> "Observation":
        if self.text_chars is not None and not 1 <= self.text_chars[0] <= self.text_chars[1] <= 8:
            raise ValueError(f"text_chars: need 1 <= low <= high <= 8, got {list(self.text_chars)}")
        return self


class Workflow(_Frozen):
    max_actions_per_ticket: int = Field(
        default=12, ge=1, description="after this many tool actions only respond/escalate remain"
    )
    max_transfers_per_ticket: int = Field(
        default=6, ge=0,
        description="after this many hand-overs between resolvers and the desk (escalate_issue, "
        "return_to_resolver) only a response remains: a ticket cannot bounce forever, even with "
        "zero handle times",
    )


def clock_time(minute: float, opens_at: str = "00:00") -> str:
    """The clock time ``minute`` minutes into a day that opens at ``opens_at`` (``HH:MM``), as ``HH:MM``
    (past midnight it wraps: a night shift opening at 21:00 shows 00:30 at minute 210)."""
    total = (clock_minutes(opens_at) + int(round(minute))) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


def clock_minutes(time: str) -> int:
    """``"08:30"`` -> 510, minutes after midnight."""
    hours, minutes = time.split(":")
    return int(hours) * 60 + int(minutes)


class Scenario(_Frozen):
    name: str = Field(min_length=1)
    description: str = ""
    opens_at: str = Field(
        default="00:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="clock time of minute 0 (HH:MM): intervals, schedules and charts print clock times from it",
    )
    horizon_minutes: float = Field(default=480.0, gt=0)
    warmup_minutes: float = Field(default=0.0, ge=0)
    max_tickets: int | None = Field(default=None, gt=0)
    arrivals: Arrivals
    customers: Customers = Customers()
    tickets: Tickets = Tickets()
    staffing: Staffing = Staffing()
    handle_times: HandleTimes = HandleTimes()
    service_level: ServiceLevel = ServiceLevel()
    sla_minutes: dict[str, float] = Field(default_factory=_default_sla)
    rewards: Rewards = Rewards()
    manager: Manager = Manager()
    observation: Observation = Observation()
    workflow: Workflow = Workflow()

    @field_validator("opens_at", mode="before")
    @classmethod
    def _sexagesimal(cls, value: object) -> object:
        # YAML 1.1 reads an unquoted 21:00 as the base-60 integer 1260 (minutes): take it as that time.
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 24 * 60:
            return f"{value // 60:02d}:{value % 60:02d}"
        return value

    def clock(self, minute: float) -> str:
        """``minute`` of the day as a clock time (see :func:`clock_time`)."""
        return clock_time(minute, self.opens_at)

    @model_validator(mode="after")
    def _check(self) -> "Scenario":
        if self.warmup_minutes >= self.horizon_minutes:
            raise ValueError(
                f"warmup_minutes ({self.warmup_minutes:g}) must be shorter than "
                f"horizon_minutes ({self.horizon_minutes:g})"
            )
        for priority, minutes in self.sla_minutes.items():
            if priority not in PRIORITIES:
                raise ValueError(f"sla_minutes: unknown priority {priority!r}")
            if minutes <= 0:
                raise ValueError(f"sla_minutes.{priority}: must be > 0, got {minutes}")
        missing = set(PRIORITIES) - set(self.sla_minutes)
        if missing:
            raise ValueError(f"sla_minutes: missing {', '.join(sorted(missing))}")
        if sum(self.staffing.peak(role) for role in ROLES) == 0:
            raise ValueError("staffing: nobody is staffed in any role")
        for i, change in enumerate(self.staffing.shifts):
            if change.at_minute >= self.horizon_minutes:
                # Legal (a shortened day keeps its schedule) but never silent: it may be a typo.
                warnings.warn(
                    f"scenario {self.name!r}: staffing.shifts[{i}].at_minute ({change.at_minute:g}) is not "
                    f"before horizon_minutes ({self.horizon_minutes:g}): that change never happens",
                    ScenarioWarning,
                    stacklevel=2,
                )
        if self.max_tickets is not None:
            if self.max_tickets > MAX_EXPECTED_ARRIVALS:
                raise ValueError(f"max_tickets: at most {MAX_EXPECTED_ARRIVALS:,}, got {self.max_tickets}")
        elif (expected := self.arrivals.expected_count(self.horizon_minutes)) > MAX_EXPECTED_ARRIVALS:
            raise ValueError(
                f"arrivals: about {expected:.3g} tickets expected over horizon_minutes "
                f"({self.horizon_minutes:g}); at most {MAX_EXPECTED_ARRIVALS:,} can be simulated in one "
                "run (lower the rates or the horizon, or set max_tickets)"
            )
        return self
