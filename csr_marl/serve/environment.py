"""The contact center as an OpenEnv ``Environment``: a :class:`~csr_marl.text.TextSession` per client.

The framework creates one :class:`ContactCenterEnvironment` per WebSocket session (from the factory
that :func:`csr_marl.serve.app.create_server_app` hands it), so concurrent clients never share a
simulation. ``reset`` starts a day; its options choose the scenario, seed, roles and colleagues::

    reset(seed=7, scenario="tasks/resolve", roles=["resolver"], colleagues="heuristic")
    step(ToolCallAction(tool="check_payment", arguments={}))

Options the client leaves out take the server's defaults (:class:`SessionDefaults`, set by
``csr-marl serve``). A client may choose only the scenarios shipped with csr_marl (``csr-marl
scenarios``): a scenario given as a YAML path is the operator's choice, made when starting the server.
Its overrides are limited to an allow-list with no path in it (:mod:`.guard`), and every ``reset``
and ``step`` runs under the server's work budget (:class:`~.guard.ServerLimits`): a request that
simulates too many tickets, runs too long, or whose client leaves, stops with a one-line error.
"""

from __future__ import annotations

import functools
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import __version__
from ..config.domain import ROLES
from ..config.loading import scenario_names
from ..sim.work import WorkLimitReached, charge_build, work_limit
from ..text import NoTurnError, TextSession, TextStep, Turn
from ..text.tools import quote
from ..text.tasks import task_roles
from ..whatif.store import json_safe
from .deps import require_serve_extra
from .guard import SERVER_STOPPING, ClientError, ServerLimits, check_override_cost, checked_overrides, override_entries, short

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import EnvironmentMetadata  # noqa: E402

from .models import ContactCenterObservation, ContactCenterState, ToolCallAction  # noqa: E402

Colleagues = str | Mapping[str, str]

DESCRIPTION = (
    "A customer-service contact center (SimPy core). The client plays staff roles through text and "
    "tool calls; built-in policies play the others. Reset options: seed, scenario, roles, colleagues, "
    "overrides. Action: {tool, arguments}."
)
README = """# csr_marl contact center

Each observation is one decision of a staff member the client plays: `text` (the ticket as the
customer wrote it, what the tools found, the conversation so far, the queue) and `tools` (the tools
legal now, chat-completions format). Answer with one tool call: `{"tool": NAME, "arguments": {...}}`
(`arguments` may be the JSON string a chat model emits). A refused call costs a little and comes back
in `error`; the same decision is asked again.

Reset options: `seed`, `scenario` (a shipped scenario, e.g. `tasks/resolve`), `roles` (of triage,
resolver, escalation), `colleagues` (a built-in policy for the other roles: heuristic, random, fifo,
escalate_all, or a mapping role -> policy), `overrides` (dotted scenario keys). The last observation
of a day carries `metadata.kpis` and `metadata.team_return`.
"""


class SessionOptionError(ClientError):
    """A reset option the client chose cannot be used (unknown scenario, role or policy)."""


class WorkBudgetError(ClientError):
    """A request ran out of its work budget (or its client left); its day is over."""


@dataclass(frozen=True)
class SessionDefaults:
    """What a ``reset`` without options plays: the server's defaults (``csr-marl serve`` options)."""

    scenario: str = "standard_day"
    roles: tuple[str, ...] = ("resolver",)
    colleagues: Colleagues = "heuristic"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    max_retries: int = 2

    def session(self, seed: int | None = None) -> TextSession:
        """A text session with these settings (raises ``ValueError`` / ``ScenarioError`` if they are bad)."""
        return TextSession(
            self.scenario, seed, roles=self.roles, colleagues=self.colleagues,
            overrides=dict(self.overrides) or None, max_retries=self.max_retries,
        )


class ContactCenterEnvironment(Environment[ToolCallAction, ContactCenterObservation, ContactCenterState]):
    """One client's contact center: reset starts a day, each step answers the client's pending turn."""

    # Each instance owns its TextSession and its random streams; nothing is shared between sessions.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, defaults: SessionDefaults | None = None, limits: ServerLimits | None = None) -> None:
        super().__init__()
        # Cheap on purpose: the framework also builds a throwaway instance for each stateless HTTP call.
        self.defaults = defaults or SessionDefaults()
        self.limits = limits or ServerLimits()
        self.stop = threading.Event()  # set when the client leaves: the running request stops
        self._session: TextSession | None = None
        self._settings: SessionDefaults | None = None
        self._state = ContactCenterState()
        self._done = True

    # --- the OpenEnv API ------------------------------------------------------------------------
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        scenario: str | None = None,
        roles: list[str] | str | None = None,
        colleagues: Colleagues | None = None,
        overrides: Mapping[str, Any] | None = None,
        **unknown: Any,
    ) -> ContactCenterObservation:
        """Start a day: ``seed`` (drawn at random when None, and reported in the state) and options."""
        if unknown:
            raise SessionOptionError(
                f"reset: unknown option(s) {short(', '.join(sorted(unknown)), 80)}; options are seed, episode_id, scenario, roles, "
                "colleagues, overrides"
            )
        if seed is not None and (type(seed) is not int or seed < 0):
            raise SessionOptionError(f"reset: seed must be a non-negative integer, got {quote(seed)}")
        settings = self._settings_for(scenario, roles, colleagues, overrides)
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
        with self._budget("reset"):
            if self._session is None or settings != self._settings:
                charge_build(override_entries(settings.overrides))  # a large build takes turns with heavy work
                try:
                    self._session = settings.session(seed)
                except ValueError as exc:  # ScenarioError is a ValueError
                    raise SessionOptionError(short(f"reset: {exc}")) from None
                self._settings = settings
            session = self._session
            try:
                turn = session.reset(seed=seed)
            except NoTurnError as exc:
                raise SessionOptionError(short(f"reset: {exc}")) from None
        self._state = ContactCenterState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            scenario=session.scenario.name,
            seed=seed,
            horizon_minutes=float(session.scenario.horizon_minutes),
            roles=list(session.roles),
            colleagues={role: str(member) for role, member in session.colleagues.items()},
        )
        self._done = turn is None
        return self._observation(turn, reward=None, info={})

    def step(self, action: ToolCallAction, timeout_s: float | None = None, **kwargs: Any) -> ContactCenterObservation:
        """Answer the pending turn with a tool call; a refused call comes back as ``error``."""
        if self._session is None or self._done:
            return ContactCenterObservation(done=True, reward=0.0, error="no day is running: call reset() to start one")
        self._state.step_count += 1
        with self._budget("step"):
            step: TextStep = self._session.step(action.tool, action.arguments)
        self._done = step.done
        observation = self._observation(step.turn, reward=step.reward, info=step.info)
        observation.terminated, observation.truncated = step.terminated, step.truncated
        if step.error is not None and observation.error is None:
            observation.error = short(step.error)
        return observation

    @property
    def state(self) -> ContactCenterState:
        """The episode's id, step count, scenario, seed and simulated minute."""
        state = self._state.model_copy()
        state.sim_minute = float(self._session.now) if self._settings is not None and self._session is not None else None
        state.done = self._done
        return state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="csr_marl",
            description=DESCRIPTION,
            version=__version__,
            readme_content=README,
            author="csr_marl",
        )

    def close(self) -> None:
        self._session = None
        self._settings = None

    # --- internals ------------------------------------------------------------------------------
    @contextmanager
    def _budget(self, call: str) -> Iterator[None]:
        """Run ``call`` under the work budget; past it, the day ends and the client is told why."""
        limits = self.limits
        try:
            with work_limit(limits.max_tickets_per_call, limits.max_seconds_per_call, (self.stop, SERVER_STOPPING)):
                yield
        except WorkLimitReached as exc:
            self._session, self._settings, self._done = None, None, True  # its core stopped mid-run
            raise WorkBudgetError(
                f"{call} stopped: {exc} (max {limits.max_tickets_per_call} tickets and "
                f"{limits.max_seconds_per_call:g} s per call); the day is over, call reset()"
            ) from None

    def _settings_for(
        self,
        scenario: str | None,
        roles: list[str] | str | None,
        colleagues: Colleagues | None,
        overrides: Mapping[str, Any] | None,
    ) -> SessionDefaults:
        """The defaults with the client's options applied, each checked for type and allowed values."""
        defaults = self.defaults
        if scenario is not None and scenario != defaults.scenario and scenario not in shipped_scenarios():
            raise SessionOptionError(f"reset: unknown scenario {quote(scenario)}; scenarios: {', '.join(shipped_scenarios())}")
        if isinstance(roles, str):
            roles = [part.strip() for part in roles.split(",") if part.strip()]
        if roles is not None and not (isinstance(roles, list) and all(isinstance(r, str) for r in roles)):
            raise SessionOptionError(f"reset: roles must be a list of role names from {list(ROLES)}")
        if colleagues is not None and not _is_colleagues(colleagues):
            raise SessionOptionError("reset: colleagues must be a policy name or a mapping from role to policy name")
        if overrides is not None and not isinstance(overrides, Mapping):
            raise SessionOptionError("reset: overrides must be a mapping of dotted keys to values")
        if overrides is not None:
            overrides = checked_overrides(overrides)
            check_override_cost(overrides, self.limits.max_override_entries)
        if isinstance(colleagues, Mapping):
            colleagues = dict(colleagues)
        if roles is None and scenario is not None and scenario != defaults.scenario:
            roles = list(task_roles(scenario, defaults.roles))  # a named task plays its own roles
        return SessionDefaults(
            scenario=defaults.scenario if scenario is None else scenario,
            roles=defaults.roles if roles is None else tuple(roles),
            colleagues=defaults.colleagues if colleagues is None else colleagues,
            overrides=defaults.overrides if overrides is None else dict(overrides),
            max_retries=defaults.max_retries,
        )

    def _observation(self, turn: Turn | None, reward: float | None, info: Mapping[str, Any]) -> ContactCenterObservation:
        metadata: dict[str, Any] = {"info": _plain(info)} if info else {}
        if turn is None:
            result = self._session.result if self._session is not None else None
            if result is not None:
                metadata["kpis"] = _plain(result.kpis)
                metadata["team_return"] = _plain(result.team_return)
            return ContactCenterObservation(done=True, reward=reward, metadata=metadata, score=self._score())
        text, error = turn.text, turn.error
        if error is not None and short(error) != error:  # a refusal is one line of at most 500 characters, in the text too
            text, error = text.replace(error, short(error)), short(error)
        return ContactCenterObservation(
            text=text, tools=_plain(turn.tools), agent=turn.agent, role=turn.role, phase=turn.phase,
            error=error, done=False, reward=reward, metadata=metadata, score=self._score(),
            ticket=asdict(turn.ticket) if turn.ticket is not None else None,
            queue=[asdict(view) for view in turn.queue], legal_tools=turn.tool_names, minute=turn.minute,
        )

    def _score(self) -> float:
        return self._session.score if self._session is not None else 0.0  # in [-1, 1] (csr_marl.text.scoring)


@functools.lru_cache(maxsize=1)
def shipped_scenarios() -> tuple[str, ...]:
    """The scenarios a client may name (read once: what ships does not change while a server runs)."""
    return tuple(scenario_names())


def _is_colleagues(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _plain(value: Any) -> Any:
    """JSON-safe plain data: numpy scalars to Python numbers, NaN and infinities to None."""
    return json.loads(json.dumps(json_safe(value), default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


