"""The OpenEnv server: the framework's own FastAPI app around :class:`ContactCenterEnvironment`.

    from csr_marl.serve import create_server_app
    app = create_server_app(scenario="tasks/resolve", roles=("resolver",), max_sessions=8)
    # uvicorn.run(app, host="127.0.0.1", port=8000)   -- or: csr-marl serve --scenario tasks/resolve

Routes are the framework's: ``/ws`` (a WebSocket session per client, its own environment each),
``/health``, ``/metadata``, ``/schema``, ``/mcp``, and the stateless ``/reset``, ``/step`` and
``/state`` (each call builds a throwaway environment, so an episode and its state live on ``/ws``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .deps import require_serve_extra

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.env_server.http_server import create_app  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from .environment import Colleagues, ContactCenterEnvironment, SessionDefaults, SessionOptionError  # noqa: E402
from .models import ContactCenterObservation, ContactCenterState, ToolCallAction  # noqa: E402

if TYPE_CHECKING:
    from fastapi import FastAPI

ENV_NAME = "csr_marl"


def create_server_app(
    scenario: str = "standard_day",
    roles: tuple[str, ...] = ("resolver",),
    colleagues: Colleagues = "heuristic",
    *,
    overrides: Mapping[str, Any] | None = None,
    max_sessions: int = 8,
    max_retries: int = 2,
) -> "FastAPI":
    """The server app; the arguments are the defaults a client's ``reset`` may override.

    The settings are checked here, by building one session: a bad scenario, role or policy name
    raises ``ValueError`` (``ScenarioError``) before any server starts.
    """
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
    defaults = SessionDefaults(scenario, tuple(roles), colleagues, dict(overrides or {}), max_retries)
    defaults.session(seed=0)
    app = create_app(
        functools.partial(ContactCenterEnvironment, defaults),
        ToolCallAction,
        ContactCenterObservation,
        env_name=ENV_NAME,
        max_concurrent_envs=max_sessions,
        state_cls=ContactCenterState,
    )
    app.add_exception_handler(SessionOptionError, _option_error)
    return app


async def _option_error(request: Request, exc: Exception) -> JSONResponse:
    """A bad reset option over plain HTTP is the client's mistake: 422 with the one-line reason."""
    return JSONResponse(status_code=422, content={"detail": str(exc)})


def run_server(app: "FastAPI", host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=log_level)
