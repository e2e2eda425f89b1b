"""``csr-marl serve``: the contact center as an OpenEnv environment server (the ``serve`` extra)."""

from __future__ import annotations

import socket
from typing import Optional

import typer

from ..config.domain import ROLES
from .common import UsageError, console, friendly_errors, parse_sets


@friendly_errors
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, "--port", envvar="PORT", help="TCP port (default: $PORT when set, as on a Hugging Face Space, else 8000)."),
    scenario: str = typer.Option("standard_day", "--scenario", help="Default scenario of a session (name or YAML path)."),
    roles: str = typer.Option(
        "resolver", "--roles", help="Roles the client plays by default, comma-separated: triage,resolver,escalation."
    ),
    colleagues: str = typer.Option(
        "heuristic", "--colleagues",
        help="Built-in policy for the other roles (heuristic, random, fifo, escalate_all), or ROLE=POLICY,... per role.",
    ),
    max_sessions: int = typer.Option(
        64, "--max-sessions",
        help="Concurrent sessions: WebSocket clients plus running HTTP /reset and /step calls (under 1 MB each).",
    ),
    max_tickets: int = typer.Option(
        5_000, "--max-tickets-per-call", help="Work budget: tickets one reset or step may simulate before it is stopped.",
    ),
    max_seconds: float = typer.Option(
        10.0, "--max-seconds-per-call", help="Work budget: wall-clock seconds one reset or step may run before it is stopped.",
    ),
    max_message_bytes: int = typer.Option(
        1 << 18, "--max-message-bytes", help="Largest WebSocket frame or HTTP body read (a larger frame closes the connection); reading one is work.",
    ),
    idle_seconds: float = typer.Option(
        600.0, "--idle-seconds", help="A WebSocket session with no reset or step this long is closed (other messages do not count).",
    ),
    auth_token: Optional[str] = typer.Option(
        None, "--auth-token", envvar="CSR_MARL_AUTH_TOKEN", show_default=False,
        help="Require 'Authorization: Bearer TOKEN' on every route and WebSocket handshake (or set $CSR_MARL_AUTH_TOKEN).",
    ),
    max_override_entries: int = typer.Option(
        1_000, "--max-override-entries",
        help="Most list entries (surges, shift changes, profile periods, values) a client's reset overrides may hold.",
    ),
    rate: float = typer.Option(50.0, "--rate-per-second", help="Requests (HTTP calls, WebSocket messages) a second per client address; 0: no limit."),
    rate_burst: int = typer.Option(100, "--rate-burst", help="Requests a client may send at once before --rate-per-second applies."),
    token_rate: Optional[float] = typer.Option(
        None, "--token-rate-per-second", show_default=False,
        help="Requests a second per bearer token (every client sharing it) \\[default: 8x --rate-per-second with a token]; 0: no limit.",
    ),
    rate_loopback: bool = typer.Option(
        False, "--rate-loopback",
        help="Apply the per-client rate and session limits to clients on this machine too (127.0.0.1, ::1; by default they are the operator's).",
    ),
    max_sessions_per_client: int = typer.Option(
        8, "--max-sessions-per-client", help="Sessions (WebSockets plus running HTTP calls) one client address may hold; IPv6 counts per /64.",
    ),
    reclaim_idle_seconds: float = typer.Option(
        30.0, "--reclaim-idle-seconds", help="When the server is full, a session with no reset or step this long is closed to make room.",
    ),
    trusted_proxies: str = typer.Option(
        "127.0.0.1", "--trusted-proxies", envvar="FORWARDED_ALLOW_IPS",
        help="Addresses or networks whose X-Forwarded-For names the client, comma-separated; '' for none.",
    ),
    max_connections_per_client: int = typer.Option(
        32, "--max-connections-per-client", help="Open connections (WebSockets too) per client socket address, loopback ones too; a trusted proxy is not capped; 0: no cap.",
    ),
    request_read_seconds: float = typer.Option(
        10.0, "--request-read-seconds", help="A request's headers and body must arrive within this many seconds.",
    ),
    sets: Optional[list[str]] = typer.Option(None, "--set", help="Override KEY=VALUE in the default scenario; repeatable."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn's log level: critical, error, warning, info, debug."),
) -> None:
    """Serve the contact center to OpenEnv clients: text turns in, tool calls out, over a WebSocket per session."""
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port}: use a port from 1 to 65535")
    from ..serve.guard import ServerLimits

    try:
        limits = ServerLimits(
            max_sessions, max_tickets, max_seconds, max_message_bytes, idle_seconds, auth_token or None,
            max_override_entries=max_override_entries, rate_per_second=rate, rate_burst=rate_burst,
            token_rate_per_second=token_rate, rate_loopback=rate_loopback, max_connections_per_client=max_connections_per_client,
            request_read_seconds=request_read_seconds, max_sessions_per_client=max_sessions_per_client,
            reclaim_idle_seconds=reclaim_idle_seconds, trusted_proxies=trusted_proxies,
        )
    except ValueError as exc:
        raise UsageError(f"--{exc}") from None
    if log_level not in ("critical", "error", "warning", "info", "debug"):
        raise UsageError(f"--log-level {log_level!r}: use critical, error, warning, info or debug")
    played = parse_roles(roles)
    others = parse_colleagues(colleagues)
    overrides = parse_sets(sets)
    from ..serve.deps import ServeUnavailable, require_serve_extra

    try:
        require_serve_extra()
    except ServeUnavailable as exc:
        raise UsageError(str(exc)) from None
    from ..serve.app import create_server_app, run_server

    app = create_server_app(scenario, played, others, overrides=overrides, limits=limits)
    _check_port_free(host, port)
    console.print(
        f"csr_marl OpenEnv server on http://{host}:{port} · scenario {scenario} · client plays {', '.join(played)} · "
        f"colleagues {colleagues} · up to {max_sessions} sessions · per call at most {max_tickets} tickets and "
        f"{max_seconds:g} s · {'bearer token required' if auth_token else 'no token: anyone who can reach it may use it'} "
        "(Ctrl-C stops it)",
        highlight=False, soft_wrap=True,
    )
    run_server(app, host=host, port=port, log_level=log_level)


def parse_roles(text: str) -> tuple[str, ...]:
    """``"triage,resolver"`` -> ``("triage", "resolver")``, every name a known role."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise UsageError(f"--roles {text!r}: name at least one of {', '.join(ROLES)}")
    unknown = [name for name in names if name not in ROLES]
    if unknown:
        raise UsageError(f"--roles: unknown role(s) {', '.join(unknown)}; roles are {', '.join(ROLES)}")
    return names


def parse_colleagues(text: str) -> str | dict[str, str]:
    """``"heuristic"`` (every other role) or ``"triage=random,escalation=fifo"`` (per role)."""
    if "=" not in text:
        if not text.strip():
            raise UsageError("--colleagues: name a built-in policy, e.g. heuristic")
        return text.strip()
    by_role: dict[str, str] = {}
    for item in text.split(","):
        role, sep, policy = (part.strip() for part in item.partition("="))
        if not sep or not role or not policy:
            raise UsageError(f"--colleagues {item!r}: expected ROLE=POLICY, e.g. triage=heuristic")
        by_role[role] = policy
    return by_role


def _check_port_free(host: str, port: int) -> None:
    """Refuse, before serving, an address that cannot be listened on (in use, or no such interface)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
