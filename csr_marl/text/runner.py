"""The LLM baseline: play days of the contact center with a chat model on some roles, score them.

    from csr_marl.text.runner import AgentRunner
    from csr_marl.text.endpoint import Endpoint
    runner = AgentRunner("tasks/resolve", {"triage": "heuristic", "resolver": "llm", "escalation": "heuristic"},
                         endpoint=Endpoint.resolve("http://127.0.0.1:8000/v1", "qwen2.5:7b"))
    report = runner.run(episodes=5, k=2)
    report.rows()        # the baseline table: KPIs and team return, mean and 95% CI over episodes
    report.pass_hat()    # {"ticket": {1: ..., 2: ...}, "episode": {...}}

Episode ``e`` runs with ``SeedSequence(seed, spawn_key=(e,))``, the customers ``csr-marl baseline``
episode ``e`` has, so the table compares with the built-in baselines row for row. Each episode is
played ``k`` times (tries) on those same customers; try ``t`` asks the model for the sampling seed
drawn from ``SeedSequence(seed, spawn_key=(e, t))`` (sample with a temperature above 0 for tries to
differ). Every model call is logged as the OpenEnv baseline scripts did: ``[START]``, one ``[STEP]``
per call, ``[END]``. See :data:`SUCCESS_RULE` for what counts as a success in pass^k.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config.domain import ROLES
from ..envs.common import ScenarioLike, resolve_scenario
from ..sim.customers import Grader
from ..sim.tickets import Ticket
from ..whatif.baselines import BaselineRow
from ..whatif.records import metric_names, replication_record
from ..whatif.replications import replication_seed
from ..whatif.summary import estimates
from .endpoint import Endpoint
from .passk import group_tries, pass_hat_curve
from .players import LLM, ChatPlayer, HumanPlayer, Player, colleagues, turn_roles
from .session import TextSession, TextStep

POLICY_LABEL = "agent"  # the table's policy column and file stem: agent_baseline.md/.json/.csv
SUCCESS_RULE = (
    "A ticket counts for the model when an agent it plays had a triage or work turn on it. It is a "
    "success in a try when the last contact of it that the model handled was closed resolved by the end "
    "of the day (every step the issue needs was done before the reply, as the simulation's resolution "
    "KPIs count it; whoever sent the reply) and the reply that closed it was graded at least "
    "{threshold:g} of 0.5 (when graded). A ticket the model handled in some tries but not in another "
    "is a failure in that try. An episode is a success when the model handled at least one ticket and "
    "the share of those tickets that were successes is at least {bar:g}. pass^k = mean over tasks of C(c,k)/C(n,k) for c "
    "successes in n tries (tau-bench); tasks are (episode, ticket id) pairs, and episodes."
)


@dataclass(frozen=True)
class TicketTry:
    """One ticket the model handled in one try, and how it ended."""

    episode: int
    trial: int
    ticket_id: int
    agents: str  # the model-played agents that had turns on it
    turns: int
    resolved: bool
    grade: float | None
    success: bool


@dataclass
class Play:
    """One try of one episode."""

    episode: int
    trial: int
    seed: str
    steps: int
    refused: int
    team_return: float
    truncated: bool
    success: bool
    record: dict[str, float]
    tickets: list[TicketTry] = field(default_factory=list)


@dataclass
class AgentReport:
    """Every play of a run, and the tables made from them."""

    scenario: str
    team: dict[str, str]
    model: str | None
    episodes: int
    k: int
    seed: int
    grade_threshold: float
    episode_bar: float
    plays: list[Play] = field(default_factory=list)

    @property
    def success_rule(self) -> str:
        return SUCCESS_RULE.format(threshold=self.grade_threshold, bar=self.episode_bar)

    def rows(self) -> list[BaselineRow]:
        """The baseline table's row: each metric's mean and 95% CI over episodes (tries averaged
        within an episode first: they share its customers, so only episodes are independent)."""
        records = []
        for episode in range(self.episodes):
            tries = [play.record for play in self.plays if play.episode == episode]
            records.append({name: _mean([r[name] for r in tries]) for name in metric_names()})
        return [BaselineRow(self.scenario, POLICY_LABEL, self.episodes, estimates(records, metric_names()))]

    def pass_hat(self) -> dict[str, dict[int, float]]:
        """``{"ticket": {j: pass^j}, "episode": {j: pass^j}}`` for j = 1..k."""
        tickets = group_tries(
            (((t.episode, t.ticket_id), t.trial, t.success) for play in self.plays for t in play.tickets), self.k
        )
        episodes = group_tries(((play.episode, play.trial, play.success) for play in self.plays), self.k)
        return {"ticket": pass_hat_curve(tickets, self.k), "episode": pass_hat_curve(episodes, self.k)}

    def ticket_tasks(self) -> int:
        return len({(t.episode, t.ticket_id) for play in self.plays for t in play.tickets})


class AgentRunner:
    """Plays episodes with each role's player; everything is checked when the runner is built.

    ``team`` maps every role to ``llm``, ``human``, a built-in policy name or ``checkpoint:PATH``
    (see :func:`~csr_marl.text.players.parse_team`). ``max_turns`` caps the calls of the model (and
    people) per try: the day then ends there, its KPIs covering the minutes so far (as ``max_cycles``
    truncates the RL environments). ``emit`` receives the ``[START]/[STEP]/[END]`` lines. ``grader``
    grades every ``respond_user`` message instead of the rubric (e.g. :class:`~csr_marl.text.judge.ChatJudge`).
    """

    def __init__(
        self,
        scenario: ScenarioLike,
        team: Mapping[str, str],
        *,
        endpoint: Endpoint | None = None,
        temperature: float | None = None,
        seed: int = 0,
        max_turns: int | None = None,
        grade_threshold: float = 0.25,
        episode_bar: float = 1.0,
        overrides: Mapping[str, Any] | None = None,
        human: Player | None = None,
        emit: Callable[[str], None] = print,
        grader: Grader | None = None,
    ) -> None:
        self.scenario = resolve_scenario(scenario, overrides)
        self.team = {role: team[role] for role in ROLES}
        self.roles = turn_roles(self.team)
        staffed = [role for role in self.roles if self.scenario.staffing.peak(role) > 0]
        if not staffed:
            raise ValueError(
                f"nobody to play: scenario {self.scenario.name} staffs "
                f"{', '.join(r for r in ROLES if self.scenario.staffing.peak(r) > 0) or 'no role'}, "
                f"and llm/human play {', '.join(self.roles) or 'no role'}"
            )
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"--max-turns must be at least 1, got {max_turns}")
        if not 0.0 <= grade_threshold <= 0.5:
            raise ValueError(f"--grade-threshold must lie in [0, 0.5], got {grade_threshold}")
        if not 0.0 < episode_bar <= 1.0:
            raise ValueError(f"--episode-bar must lie in (0, 1], got {episode_bar}")
        if temperature is not None and not 0.0 <= temperature <= 2.0:
            raise ValueError(f"--temperature must lie in [0, 2], got {temperature}")
        if LLM in self.team.values() and endpoint is None:
            raise ValueError("a role is played by llm: give the chat endpoint (--base-url and --model)")
        self.endpoint = endpoint
        self.chat = ChatPlayer(endpoint, temperature=temperature) if endpoint is not None and LLM in self.team.values() else None
        human_player = human or HumanPlayer()
        self.players: dict[str, Player] = {
            role: (self.chat if self.team[role] == LLM else human_player)  # type: ignore[misc]
            for role in self.roles
        }
        self.session = TextSession(
            self.scenario, roles=self.roles, colleagues=colleagues(self.team, self.scenario), grader=grader
        )
        self.seed = seed
        self.max_turns = max_turns
        self.grade_threshold = grade_threshold
        self.episode_bar = episode_bar
        self.emit = emit

    def run(self, episodes: int = 1, k: int = 1) -> AgentReport:
        """``episodes`` episodes, each played ``k`` times."""
        if episodes < 1:
            raise ValueError(f"--episodes must be at least 1, got {episodes}")
        if k < 1:
            raise ValueError(f"--k must be at least 1, got {k}")
        report = AgentReport(
            self.scenario.name, dict(self.team), self.endpoint.model if self.chat else None, episodes, k, self.seed,
            self.grade_threshold, self.episode_bar,
        )
        for episode in range(episodes):
            for trial in range(k):
                report.plays.append(self.play(episode, trial))
        return report

    def play(self, episode: int, trial: int = 0) -> Play:
        """One try of episode ``episode``: the same customers as every other try and baseline."""
        session = self.session
        if self.chat is not None:
            sampling = np.random.SeedSequence(self.seed, spawn_key=(episode, trial))
            self.chat.sampling_seed = int(sampling.generate_state(1)[0])
        team = ",".join(f"{role}:{self.team[role]}" for role in ROLES)
        model = self.endpoint.model if self.chat is not None else "-"
        self.emit(
            f"[START] task={self.scenario.name} episode={episode} trial={trial} seed={self.seed}/{episode} "
            f"model={model} team={team}"
        )
        turn = session.reset(seed=replication_seed(self.seed, episode))
        handled: dict[int, Ticket] = {}
        agents: dict[int, set[str]] = {}
        turns: dict[int, int] = {}
        steps = refused = 0
        truncated = False
        while turn is not None:
            if self.max_turns is not None and steps >= self.max_turns:
                _truncate(session)  # the day ends here: KPIs cover the minutes so far
                truncated = True
                break
            ticket = session.decision.ticket
            if ticket is not None:
                handled[ticket.id] = ticket  # a returning contact replaces the one before
                agents.setdefault(ticket.id, set()).add(turn.agent)
                turns[ticket.id] = turns.get(ticket.id, 0) + 1
            name, arguments = self.players[turn.role](turn)
            step = session.step(name, arguments)
            steps += 1
            refused += step.error is not None
            self.emit(_step_line(steps, turn.agent, name, arguments, step))
            turn = step.turn
        result = session.result
        tickets = [
            self._outcome(episode, trial, tid, ticket, ",".join(sorted(agents[tid])), turns[tid])
            for tid, ticket in sorted(handled.items())
        ]
        wins = sum(t.success for t in tickets)
        success = bool(tickets) and wins >= self.episode_bar * len(tickets) - 1e-9
        self.emit(
            f"[END] success={str(success).lower()} steps={steps} team_return={result.team_return:.2f} "
            f"tickets={wins}/{len(tickets)} refused={refused} truncated={str(truncated).lower()}"
        )
        return Play(
            episode, trial, f"SeedSequence({self.seed}, spawn_key=({episode},))", steps, refused,
            result.team_return, truncated, success, replication_record(result), tickets,
        )

    def _outcome(self, episode: int, trial: int, tid: int, ticket: Ticket, agents: str, turns: int) -> TicketTry:
        resolved, grade = closing(ticket)
        success = resolved and (grade is None or grade >= self.grade_threshold - 1e-12)
        return TicketTry(episode, trial, tid, agents, turns, resolved, grade, success)


def closing(ticket: Ticket) -> tuple[bool, float | None]:
    """(closed resolved, the closing reply's grade or None): the core records the grade on the contact
    when a reply closes it, and whether the issue's steps were all done decides resolution."""
    grade = getattr(ticket, "grade", None)
    if grade is None:
        return False, None  # never answered: abandoned, or still open at the end of the day
    score = getattr(grade, "score", None)
    return bool(ticket.resolvable()), (float(score) if isinstance(score, (int, float)) else None)


def _truncate(session: TextSession) -> None:
    """End the session's day now, as the RL environments' ``max_cycles`` does (the driver's stop:
    the core settles the minutes so far and no decision stays pending)."""
    session.stop()


def _step_line(number: int, agent: str, name: str, arguments: Any, step: TextStep) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    args = " ".join(args.split())
    if len(args) > 80:
        args = args[:77] + "..."
    line = (
        f"[STEP] step={number} agent={agent} tool={str(name)[:60]} args={args} reward={step.reward:.2f} "
        f"done={str(step.done).lower()}"
    )
    grade = step.info.get("reply_grade") if step.info else None
    if isinstance(grade, Mapping) and isinstance(grade.get("score"), (int, float)):
        line += f" grade={grade['score']:.2f}"
    error = " ".join(step.error.split()) if step.error else "null"
    return f"{line} error={error}"


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan
