"""The OpenEnv server: the framework's own FastAPI app around :class:`ContactCenterEnvironment`.

    from csr_marl.serve import create_server_app
    app = create_server_app(scenario="tasks/resolve", roles=("resolver",), max_sessions=8)
    # uvicorn.run(app, host="127.0.0.1", port=8000)   -- or: csr-marl serve --scenario tasks/resolve

Routes: ``/ws`` (a WebSocket session per client, its own environment each), ``/health``,
``/metadata``, ``/schema``, and the stateless ``/reset``, ``/step`` and ``/state`` (each call builds a
throwaway environment, so an episode and its state live on ``/ws``). The simulation routes are
:mod:`.routes` (the framework's protocol, under the server's limits: :class:`~.guard.ServerLimits`);
with ``auth_token`` every route and the WebSocket handshake need ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .deps import require_serve_extra

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.env_server.http_server import create_app  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from .clients import TrustedProxies  # noqa: E402
from .connections import guarded_protocol, quiet_floods, raise_open_file_limit  # noqa: E402
from .environment import Colleagues, ContactCenterEnvironment, SessionDefaults, SessionOptionError  # noqa: E402
from .guard import SERVER_STOPPING, RequestGuard, ServerLimits, short  # noqa: E402
from .listener import GuardedListener, listening_sockets  # noqa: E402
from .models import ContactCenterObservation, ContactCenterState, ToolCallAction  # noqa: E402
from .routes import install  # noqa: E402

if TYPE_CHECKING:
    from fastapi import FastAPI

ENV_NAME = "csr_marl"


def create_server_app(
    scenario: str = "standard_day",
    roles: tuple[str, ...] = ("resolver",),
    colleagues: Colleagues = "heuristic",
    *,
    overrides: Mapping[str, Any] | None = None,
    max_sessions: int | None = None,
    max_retries: int = 2,
    limits: ServerLimits | None = None,
) -> "FastAPI":
    """The server app; the arguments are the defaults a client's ``reset`` may override.

    ``limits`` caps sessions and each request's work and sets the bearer token (``max_sessions``, if
    given, replaces its session cap). The settings are checked here, by building one session: a bad
    scenario, role or policy name raises ``ValueError`` (``ScenarioError``) before any server starts.
    """
    limits = limits or ServerLimits()
    if max_sessions is not None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        limits = dataclasses.replace(limits, max_sessions=max_sessions)
    defaults = SessionDefaults(scenario, tuple(roles), colleagues, dict(overrides or {}), max_retries)
    defaults.session(seed=0)
    factory = functools.partial(ContactCenterEnvironment, defaults, limits)
    app = create_app(
        factory,
        ToolCallAction,
        ContactCenterObservation,
        env_name=ENV_NAME,
        max_concurrent_envs=limits.max_sessions,
        state_cls=ContactCenterState,
    )
    install(app, factory, limits)
    app.add_exception_handler(SessionOptionError, _option_error)
    app.add_middleware(RequestGuard, limits=limits)
    app.state.limits = limits
    return app


async def _option_error(request: Request, exc: Exception) -> JSONResponse:
    """A bad reset option over plain HTTP is the client's mistake: 422 with the one-line reason."""
    return JSONResponse(status_code=422, content={"detail": short(str(exc))})


def run_server(app: "FastAPI", host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn until SIGTERM / SIGINT, which stops every running request at once.

    WebSocket frames are read up to the app's ``max_message_bytes`` (a larger one closes that
    connection); a request's headers and body must arrive within ``request_read_seconds``; an address
    holds at most ``max_connections_per_client`` connections (its WebSockets included, unless it is a
    trusted proxy); ``X-Forwarded-For`` is read from ``trusted_proxies`` only; a flood of socket errors is logged once
    per condition every 10 s, without tracebacks; open connections get 2 s to close after the signal.
    """
    server, sockets = guarded_server(app, host, port, log_level)
    raise_open_file_limit()
    stop = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        SERVER_STOPPING.set()  # simulations running in worker threads stop at their next ticket
        stop(sig, frame)

    server.handle_exit = handle_exit  # type: ignore[method-assign]
    SERVER_STOPPING.clear()
    # Sessions run in threads: a 1 ms switch interval (not 5) lets a short step in between a long one's slices.
    sys.setswitchinterval(0.001)
    quiet_floods()  # after uvicorn's logging setup (in run), its loggers exist: filter them now
    server.run(sockets=sockets)


def guarded_server(app: "FastAPI", host: str, port: int, log_level: str = "info") -> tuple[Any, list[GuardedListener]]:
    """The uvicorn server for ``app`` under its limits, and its bound sockets (``server.run(sockets=...)``).

    The sockets refuse, as they accept, connections past their address's cap (:mod:`.listener`): a
    flood of them costs the event loop no transport, task or protocol. Raises ``OSError`` if the
    address cannot be bound.
    """
    import uvicorn

    limits: ServerLimits = getattr(app.state, "limits", ServerLimits())
    proxies = TrustedProxies(limits.trusted_proxies)
    protocol = guarded_protocol(limits.request_read_seconds, limits.max_connections_per_client, proxies, limits.rate_loopback)
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, ws_max_size=limits.max_message_bytes,
        timeout_graceful_shutdown=2, ws_ping_interval=20.0, ws_ping_timeout=20.0, http=protocol, timeout_keep_alive=5,
        # X-Forwarded-For names the client only on connections from a trusted proxy; from anyone else it is ignored
        proxy_headers=bool(proxies.spec), forwarded_allow_ips=proxies.spec or None,
    )
    return uvicorn.Server(config), listening_sockets(host, port, protocol.book, proxies)
