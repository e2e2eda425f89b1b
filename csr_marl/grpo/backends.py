"""Where a GRPO rollout's episode runs: in this process, or on a ``csr-marl serve`` server.

Both answer the same three calls (start an episode of a task, make a tool call, end it) with a
:class:`Reply`, so :class:`csr_marl.grpo.ContactCenterToolEnv` plays either the same way. An episode
draws its ticket from one side of the bank's held-out split (``tickets.split``: ``all``, ``train`` or
``test``; :mod:`csr_marl.config.tickets`), so a model can be trained on some ticket templates and
wordings and judged on others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..config.tickets import SPLITS
from ..text.session import NoTurnError, TextSession, TextStep
from ..text.tasks import task_roles, task_session
from .cases import case_actions


@dataclass(frozen=True)
class Reply:
    """What the environment said: the caller's next decision as text (empty once over), the step's
    reward, the episode score so far, and how the episode stands."""

    text: str
    reward: float = 0.0
    score: float = 0.0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    error: str | None = None


def split_overrides(split: str) -> dict[str, str] | None:
    """The scenario overrides that draw tickets from ``split`` (None for ``all``, the scenarios' own)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return None if split == "all" else {"tickets.split": split}


def held_out_side(task: str) -> dict[str, list[str]]:
    """What ``task``'s ``test`` side holds that its ``train`` side never shows: ``templates`` held out
    whole, and ``wordings``: the templates on the train side with text variants held out."""
    from ..config.loading import load_scenario, load_ticket_bank

    scenario = load_scenario(task)
    bank = load_ticket_bank(scenario.tickets.bank)
    tested = bank.templates_in("test", scenario.tickets.templates)
    return {"templates": [t.id for t, _ in tested if t.split == "test"],
            "wordings": [t.id for t, _ in tested if t.split == "train"]}


class Backend(Protocol):
    def start(self, task: str, seed: int, split: str = "all") -> Reply: ...

    def call(self, name: str, arguments: dict[str, Any]) -> Reply: ...

    def stop(self) -> float: ...

    def breakdown(self) -> list[dict[str, Any]]: ...


class InProcess:
    """Episodes in this process: one :class:`~csr_marl.text.TextSession` per task and split, reused."""

    def __init__(self, colleagues: str = "heuristic", max_retries: int = 2) -> None:
        self.colleagues = colleagues
        self.max_retries = max_retries
        self._sessions: dict[tuple[str, str], TextSession] = {}
        self._session: TextSession | None = None
        self._tickets: dict[int, Any] = {}  # ticket id -> the ticket, in the order the caller first called on it
        self._shown: dict[int, Any] = {}  # ticket id -> the ticket, every ticket a decision of the caller's showed
        self._accepted: dict[int, list[str]] = {}  # ticket id -> the caller's accepted calls on it

    def start(self, task: str, seed: int, split: str = "all") -> Reply:
        session = self._sessions.get((task, split))
        if session is None:
            session = self._sessions[(task, split)] = task_session(
                task, seed, colleagues=self.colleagues, max_retries=self.max_retries,
                overrides=split_overrides(split),
            )
        self._session = session
        self._tickets, self._shown, self._accepted = {}, {}, {}
        try:
            turn = session.reset(seed=seed)
        except NoTurnError as exc:
            raise ValueError(f"task {task!r}, seed {seed}: {exc}") from None
        self._note_shown()
        return Reply(turn.text)

    def _note_shown(self) -> None:
        decision = self._session.decision if self._session is not None else None
        if decision is not None and decision.ticket is not None:
            self._shown.setdefault(decision.ticket.id, decision.ticket)

    @property
    def session(self) -> TextSession | None:
        """The :class:`~csr_marl.text.TextSession` of the current episode (None before the first);
        its ``decision`` holds the ticket the caller is on."""
        return self._session

    def call(self, name: str, arguments: dict[str, Any]) -> Reply:
        assert self._session is not None, "start an episode first"
        decision = self._session.decision
        ticket = decision.ticket if decision is not None else None
        step: TextStep = self._session.step(name, arguments)
        if ticket is not None:
            self._tickets.setdefault(ticket.id, ticket)
            if step.error is None:
                self._accepted.setdefault(ticket.id, []).append(name)
        self._note_shown()
        turn = step.turn
        return Reply(
            turn.text if turn is not None else "", step.reward, step.score, step.done, step.terminated,
            step.truncated, step.error,
        )

    def stop(self) -> float:
        session = self._session
        if session is None:
            return 0.0
        if session.decision is not None:
            session.stop()
        return session.score

    def breakdown(self) -> list[dict[str, Any]]:
        """The episode's score per ticket (:attr:`TextSession.score_breakdown`), then each ticket the
        caller was shown and never called on (``acted`` False, grade 0); each with the ticket's
        ``template`` and what the case needed of the caller and what the caller did
        (:func:`csr_marl.grpo.cases.case_actions`)."""
        if self._session is None:
            return []
        scored = self._session.score_breakdown
        tickets = list(self._tickets.values())
        if len(tickets) != len(scored):  # the score counts the tickets the caller called on, as this does
            return scored
        idle = {"checks": {}, "steps": [], "reply": None, "resolved": False, "collateral": 0, "acted": False, "grade": 0.0}
        rows = scored + [dict(idle) for id_ in self._shown if id_ not in self._tickets]
        tickets += [ticket for id_, ticket in self._shown.items() if id_ not in self._tickets]
        roles = self._session.roles
        return [{**row, "template": ticket.template.id,
                 **case_actions(ticket, roles, row, self._accepted.get(ticket.id, []))}
                for row, ticket in zip(rows, tickets)]


class Remote:
    """Episodes on a ``csr-marl serve`` server: one WebSocket session (the OpenEnv client), kept open."""

    def __init__(self, base_url: str, colleagues: str = "heuristic") -> None:
        from ..serve.client import ContactCenterClient  # the serve extra, imported on first use

        self.colleagues = colleagues
        self._client = ContactCenterClient(base_url=base_url).sync()
        self._client.connect()
        self._score = 0.0

    def start(self, task: str, seed: int, split: str = "all") -> Reply:
        options: dict[str, Any] = {"seed": seed, "scenario": task, "roles": list(task_roles(task)),
                                   "colleagues": self.colleagues}
        overrides = split_overrides(split)
        if overrides is not None:
            options["overrides"] = overrides  # the server lets a client choose the split (serve/guard.py)
        return self._reply(self._client.reset(**options))

    def call(self, name: str, arguments: dict[str, Any]) -> Reply:
        from ..serve.models import ToolCallAction

        return self._reply(self._client.step(ToolCallAction(tool=name, arguments=arguments)))

    def stop(self) -> float:
        return self._score  # the server keeps the session; the next reset starts afresh

    def breakdown(self) -> list[dict[str, Any]]:
        return []  # the server reports the score, not what it is made of

    def close(self) -> None:
        self._client.close()

    def _reply(self, result: Any) -> Reply:
        observation = result.observation
        self._score = float(observation.score)
        return Reply(
            observation.text, float(result.reward or 0.0), self._score, bool(result.done),
            bool(observation.terminated), bool(observation.truncated), observation.error,
        )
