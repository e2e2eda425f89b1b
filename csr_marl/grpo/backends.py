"""Where a GRPO rollout's episode runs: in this process, or on a ``csr-marl serve`` server.

Both answer the same three calls (start an episode of a task, make a tool call, end it) with a
:class:`Reply`, so :class:`csr_marl.grpo.ContactCenterToolEnv` plays either the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..text.session import NoTurnError, TextSession, TextStep
from ..text.tasks import task_roles, task_session


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


class Backend(Protocol):
    def start(self, task: str, seed: int) -> Reply: ...

    def call(self, name: str, arguments: dict[str, Any]) -> Reply: ...

    def stop(self) -> float: ...

    def breakdown(self) -> list[dict[str, Any]]: ...


class InProcess:
    """Episodes in this process: one :class:`~csr_marl.text.TextSession` per task, reused."""

    def __init__(self, colleagues: str = "heuristic", max_retries: int = 2) -> None:
        self.colleagues = colleagues
        self.max_retries = max_retries
        self._sessions: dict[str, TextSession] = {}
        self._session: TextSession | None = None

    def start(self, task: str, seed: int) -> Reply:
        session = self._sessions.get(task)
        if session is None:
            session = self._sessions[task] = task_session(
                task, seed, colleagues=self.colleagues, max_retries=self.max_retries
            )
        self._session = session
        try:
            turn = session.reset(seed=seed)
        except NoTurnError as exc:
            raise ValueError(f"task {task!r}, seed {seed}: {exc}") from None
        return Reply(turn.text)

    def call(self, name: str, arguments: dict[str, Any]) -> Reply:
        assert self._session is not None, "start an episode first"
        step: TextStep = self._session.step(name, arguments)
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
        """The episode's score per ticket (:attr:`TextSession.score_breakdown`)."""
        return self._session.score_breakdown if self._session is not None else []


class Remote:
    """Episodes on a ``csr-marl serve`` server: one WebSocket session (the OpenEnv client), kept open."""

    def __init__(self, base_url: str, colleagues: str = "heuristic") -> None:
        from ..serve.client import ContactCenterClient  # the serve extra, imported on first use

        self.colleagues = colleagues
        self._client = ContactCenterClient(base_url=base_url).sync()
        self._client.connect()
        self._score = 0.0

    def start(self, task: str, seed: int) -> Reply:
        result = self._client.reset(seed=seed, scenario=task, roles=list(task_roles(task)), colleagues=self.colleagues)
        return self._reply(result)

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
