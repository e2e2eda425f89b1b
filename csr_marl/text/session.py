"""The contact center for language models, as a plain Python API: text in, tool calls out.

    from csr_marl.text import TextSession
    session = TextSession("tasks/resolve", seed=0)
    turn = session.reset()
    while turn is not None:
        print(turn.text)                          # the decision, as text
        name, arguments = my_model(turn.text, turn.tools)   # a chat model's tool call
        result = session.step(name, arguments)
        turn = result.turn

The caller plays the roles in ``roles`` (every role by default); ``colleagues`` answer every other
decision, so the same SimPy core runs the day between the caller's turns. ``colleagues`` is a built-in
policy's name for every other role, or a mapping from role to a name or to any callable from a
``Decision`` to a legal action (a trained checkpoint from ``csr_marl.train.load_checkpoint_policy``, a
person at the keyboard, ...): a mixed team in one episode, on the same customers. A call
that is malformed or not legal now is refused with one line that says why (in ``result.error`` and at
the top of the next turn's text) and costs ``rewards.illegal_action``; the same decision is asked
again, and after ``max_retries`` refusals in a row the decision takes its fallback (as the RL
environments do). ``respond_user(message)`` is graded 0.0-0.5 by the rubric of
:mod:`csr_marl.sim.responses`, or by ``grader`` (any ``(ticket, message) -> ReplyGrade``, such as the
LLM judge of :mod:`csr_marl.text.judge`); ``ask_customer(question)`` gets the customer's reply, which
joins the ticket's story. ``info`` of a step carries the caller's ``customer_reply`` and ``reply_grade``
(score, parts, notes) and every such ``events`` entry since the last call. The reward of a step is what the acting agent earned from its call until the
caller's next turn (or the end), under the scenario's reward mode.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config.domain import ROLES
from ..envs.common import ScenarioLike, resolve_scenario
from ..envs.driver import CenterDriver
from ..policies.base import make_policy
from ..sim.center import ContactCenter
from ..sim.customers import Grader
from ..sim.decisions import Decision, Phase, decode_triage
from ..sim.result import SimulationResult
from .observation import TicketView, describe, ticket_view
from .scoring import EpisodeScore
from .tools import ToolCallError, parse_call, tool_specs

#: Who plays the roles no model plays: one built-in policy name for all, or per role a name or a callable.
Colleagues = str | Mapping[str, str | Callable[[Decision], int]]


class NoTurnError(RuntimeError):
    """The episode ended before the caller had anything to decide (no ticket reached its roles)."""


@dataclass
class Turn:
    """A decision for the caller: which agent, the text to read, the tools it may call.

    Beside the text, the same content as typed fields: ``ticket`` (the ticket being worked or
    triaged, as :class:`~csr_marl.text.observation.TicketView`: id, customer name, tier, subject, body,
    declared and assigned labels, revealed facts, steps done, history) or, for a pick, ``queue`` (the
    waiting tickets shown); ``tool_names`` lists the tools legal now.
    """

    agent: str
    role: str
    phase: str
    text: str
    tools: list[dict[str, Any]]
    error: str | None = None  # why the previous call was refused, if it was
    ticket: TicketView | None = None
    queue: list[TicketView] = field(default_factory=list)
    minute: float = 0.0  # the simulated minute of the decision

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools legal now."""
        return [tool["function"]["name"] for tool in self.tools]


@dataclass
class TextStep:
    """What a call led to: the caller's next turn (None once the episode is over) and the reward.

    ``done`` is ``terminated or truncated``: ``terminated`` when the episode's work is finished
    (every ticket of a ``max_tickets`` episode closed), ``truncated`` when a limit cut it (the
    shift's end, or :meth:`TextSession.stop`). ``score`` is the episode's score in [-1, 1] so far
    (:mod:`csr_marl.text.scoring`), final once ``done``.
    """

    turn: Turn | None
    reward: float
    done: bool
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    score: float = 0.0


class TextSession:
    """One episode at a time of the contact center, driven by text and tool calls."""

    def __init__(
        self,
        scenario: ScenarioLike = "standard_day",
        seed: int | None = None,
        *,
        roles: tuple[str, ...] = ROLES,
        colleagues: Colleagues = "heuristic",
        overrides: Mapping[str, Any] | None = None,
        max_retries: int = 2,
        grader: Grader | None = None,
    ) -> None:
        unknown = [role for role in roles if role not in ROLES]
        if unknown:
            raise ValueError(f"roles: unknown role(s) {unknown}; roles are {list(ROLES)}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.scenario = resolve_scenario(scenario, overrides)
        self.roles = tuple(roles)
        self.colleagues = _colleagues_by_role(colleagues, self.roles)
        for member in self.colleagues.values():
            if isinstance(member, str):
                make_policy(member, self.scenario, np.random.default_rng(0))  # an unknown name fails here
        self.max_retries = max_retries
        self._driver = CenterDriver(self.scenario, strict=True, seed=seed, grader=grader)
        self._policies: dict[str, Callable[[Decision], int]] = {}
        self._refused = 0
        self.conversation: dict[int, list[str]] = defaultdict(list)  # ticket id -> what happened
        self._score = EpisodeScore(self.roles, self.scenario.max_tickets)

    # --- the API --------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> Turn:
        """Start an episode; the caller's first turn. Raises :class:`NoTurnError` (one line saying why)
        when the episode ends before the caller has anything to decide."""
        driver = self._driver
        driver.start(seed)
        assert driver.center is not None
        stream = driver.center.streams["policy"]
        self._policies = {}
        for role, member in self.colleagues.items():
            policy = make_policy(member, self.scenario, stream) if isinstance(member, str) else member
            bind = getattr(policy, "bind", None)
            if bind is not None:
                bind(driver.center)  # a trained checkpoint reads the running core
            self._policies[role] = policy
        self.conversation = defaultdict(list)
        driver.center.transcript = []
        driver.center.own_words = frozenset(self.roles)  # a reply forced by the tool cap says nothing
        self._refused = 0
        self._score = EpisodeScore(self.roles, self.scenario.max_tickets)
        self._colleagues_act()
        self._drain()
        turn = self._turn()
        if turn is None:
            raise NoTurnError(
                f"scenario {self.scenario.name!r}: the episode ended at minute {self.now:.1f} before any "
                f"decision of the roles played ({', '.join(self.roles)}): no ticket reached them; "
                "lengthen horizon_minutes, raise the arrival rate, or play another role"
            )
        return turn

    def step(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> TextStep:
        """The caller's tool call for the pending turn."""
        driver = self._driver
        decision = driver.decision
        if decision is None:
            raise RuntimeError("the day is over: call reset()")
        agent = decision.agent
        try:
            call = parse_call(decision, name, arguments)
        except ToolCallError as refusal:
            return self._refuse(decision, str(refusal))
        self._refused = 0
        self._record(decision, call.action, call.arguments)
        self._score.call(decision, call.action, call.refund)
        driver.act(call.action, call.text, call.refund)
        self._colleagues_act()
        info = self._drain()
        return self._step(agent, info)

    def stop(self) -> None:
        """End the episode now (a runner's turn limit, as ``max_cycles`` truncates the RL
        environments): the KPIs cover the minutes so far and no decision stays pending."""
        self._driver.stop()
        self._drain()

    @property
    def score(self) -> float:
        """The episode's score in [-1, 1] so far (:mod:`csr_marl.text.scoring`)."""
        center = self._driver.center
        return self._score.value(center.flow["arrived"] if center is not None else 0)

    @property
    def score_breakdown(self) -> list[dict[str, Any]]:
        """What the score is made of, per ticket of the episode so far (:meth:`EpisodeScore.breakdown`)."""
        return self._score.breakdown()

    @property
    def terminated(self) -> bool:
        """The episode's work is finished: every ticket of a ``max_tickets`` episode was closed."""
        return self._driver.decision is None and self._driver.ended_early

    @property
    def truncated(self) -> bool:
        """A limit ended the episode: the shift's end (``horizon_minutes``) or :meth:`stop`."""
        return self._driver.center is not None and self._driver.decision is None and not self._driver.ended_early

    @property
    def decision(self) -> Decision | None:
        """The core's pending decision behind the current turn (for scripted agents and built-in
        policies playing the caller's part; a language model reads ``turn.text``)."""
        return self._driver.decision

    @property
    def now(self) -> float:
        """The simulated minute (0 before the first reset)."""
        center = self._driver.center
        return center.now if center is not None else 0.0

    @property
    def ended_early(self) -> bool:
        """The day ended before the horizon (every ticket of a ``max_tickets`` day closed)."""
        return self._driver.ended_early

    def reward_components(self, agent: str) -> Any:
        """What ``agent`` earned since its last turn, per reward component (as the vector envs'
        ``info["reward_components"]``)."""
        return self._driver.account.since_turn_components(agent)

    @property
    def center(self) -> ContactCenter:
        """The running SimPy core (clock, queues, the ledger of rewards)."""
        assert self._driver.center is not None, "call reset() first"
        return self._driver.center

    @property
    def result(self) -> SimulationResult:
        """The day's KPIs and team return, as ``csr_marl.simulate`` reports them (once it is over)."""
        assert self._driver.center is not None
        return self._driver.center.result()

    # --- internals ------------------------------------------------------------------------------
    def _refuse(self, decision: Decision, why: str) -> TextStep:
        driver = self._driver
        assert driver.center is not None
        agent = decision.agent
        driver.center.rewards.add("illegal_action", self.scenario.rewards.illegal_action, agent)
        self._score.call(decision, None)
        self._refused += 1
        if self._refused <= self.max_retries:
            # The refusal is a turn of its own: its penalty is booked now, so no later step counts it.
            driver.account.turn(agent)
            driver.account.add(driver.center.rewards.drain())
            turn = self._turn(error=why)
            return TextStep(turn, driver.account.since_turn(agent), False, error=why, score=self.score)
        self._refused = 0
        fallback = decision.fallback()
        self._record(decision, fallback, {}, note=" (fallback after refused calls)")
        self._score.call(decision, fallback, own=False)  # the fallback's labels are not the caller's
        # A fallback reply says nothing (graded as an empty message): refusing never writes a good reply.
        driver.act(fallback, "" if decision.phase is Phase.WORK else None)
        self._colleagues_act()
        info = self._drain()
        return self._step(
            agent, info, error=why,
            note=f"{why}; after {self.max_retries + 1} refused calls the fallback was taken",
        )

    def _step(self, agent: str, info: dict[str, Any], error: str | None = None, note: str | None = None) -> TextStep:
        driver = self._driver
        done = driver.decision is None
        return TextStep(
            self._turn(error=note), driver.account.since_turn(agent), done, error=error, info=info,
            terminated=self.terminated, truncated=self.truncated, score=self.score,
        )

    def _colleagues_act(self) -> None:
        """Run the core, built-in policies answering, until the caller decides or the day ends."""
        driver = self._driver
        while driver.decision is not None and driver.decision.role not in self.roles:
            decision = driver.decision
            action = self._policies[decision.role](decision)
            self._record(decision, action, {})
            driver.act(action)

    def _drain(self) -> dict[str, Any]:
        """What customers said and how replies were graded since the last call: each customer's reply
        joins its ticket's story; the caller's own (``events``, and the latest of each kind as
        ``customer_reply`` / ``reply_grade``) go into the step's ``info``."""
        center = self._driver.center
        assert center is not None and center.transcript is not None
        events, center.transcript = center.transcript, []
        info: dict[str, Any] = {}
        mine: list[dict[str, Any]] = []
        for kind, agent, ticket, payload in events:
            if kind == "reply_grade":
                own = agent.rsplit("_", 1)[0] in self.roles  # a colleague's reply earns the caller nothing
                self._score.closed(ticket, bool(payload["resolved"]), float(payload["score"]) if own else None)
            if kind == "customer_reply":
                self.conversation[ticket.id].append(f"customer {ticket.customer} replied: \"{payload['reply']}\"")
            if agent.rsplit("_", 1)[0] in self.roles:
                event = {"kind": kind, "agent": agent, "ticket_id": ticket.id, **payload}
                mine.append(event)
                info[kind] = payload["reply"] if kind == "customer_reply" else event
        if mine:
            info["events"] = mine
        return info

    def _turn(self, error: str | None = None) -> Turn | None:
        driver = self._driver
        decision = driver.decision
        if decision is None:
            return None
        assert driver.center is not None
        ticket = decision.ticket
        now = driver.center.now
        history = self.conversation[ticket.id] if ticket is not None else ()
        text = describe(driver.center, decision, history)
        if error is not None:
            text = f"Your last call was refused: {error}\n\n{text}"
        return Turn(
            decision.agent, decision.role, decision.phase.value, text, tool_specs(decision), error,
            ticket=ticket_view(ticket, now, history) if ticket is not None else None,
            queue=[ticket_view(t, now) for t in decision.slots] if decision.phase is Phase.PICK else [],
            minute=round(now, 3),
        )

    def _record(self, decision: Decision, action: int, arguments: Mapping[str, Any], note: str = "") -> None:
        """One line of the ticket's story (pick decisions start a ticket's work, not its story)."""
        if decision.phase is Phase.PICK:
            ticket = decision.slots[action]
            self.conversation[ticket.id].append(f"{decision.agent} took the ticket{note}")
            return
        assert decision.ticket is not None
        if decision.phase is Phase.TRIAGE:
            category, priority, route = decode_triage(action)
            line = f"{decision.agent} classified it {category}, priority {priority}, routed to {route}"
        else:
            tool = decision.tool(action)
            said = "; ".join(f"{k}: {v}" for k, v in arguments.items())
            line = f"{decision.agent} used {tool}" + (f" ({said})" if said else "")
        self.conversation[decision.ticket.id].append(line + note)


def _colleagues_by_role(
    colleagues: Colleagues, played: tuple[str, ...]
) -> dict[str, str | Callable[[Decision], int]]:
    """Who answers each role the caller does not play (a mapping's missing roles: the heuristic)."""
    others = [role for role in ROLES if role not in played]
    if isinstance(colleagues, str):
        return dict.fromkeys(others, colleagues)
    unknown = [role for role in colleagues if role not in ROLES]
    if unknown:
        raise ValueError(f"colleagues: unknown role(s) {unknown}; roles are {list(ROLES)}")
    clash = [role for role in colleagues if role in played]
    if clash:
        raise ValueError(f"colleagues: {clash} are played by the caller (roles={list(played)})")
    return {role: colleagues.get(role, "heuristic") for role in others}
