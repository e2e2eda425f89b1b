"""The serve extra: the OpenEnv framework is optional, imported only when serving or connecting."""

from __future__ import annotations

INSTALL_HINT = "pip install -e \".[serve]\" (or pip install 'csr-marl[serve]')"


class ServeUnavailable(ImportError):
    """The OpenEnv framework (the ``openenv`` package) or its server parts are not installed."""


def require_serve_extra() -> None:
    """Import the OpenEnv framework and its web server, or fail with one line naming the extra."""
    try:
        import fastapi  # noqa: F401
        import openenv.core.env_server  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ServeUnavailable(f"the OpenEnv server needs {exc.name or 'openenv'}: {INSTALL_HINT}") from exc
