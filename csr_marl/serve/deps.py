"""The serve extra: the OpenEnv framework is optional, imported only when serving or connecting."""

from __future__ import annotations

from ..config.extras import require_modules

INSTALL_HINT = "pip install -e \".[serve]\" (or pip install 'csr-marl[serve]')"


class ServeUnavailable(ImportError):
    """The OpenEnv framework (the ``openenv`` package) or its server parts are not installed."""


def require_serve_extra() -> None:
    """Import the OpenEnv framework and its web server, or fail with one line naming the extra."""
    require_modules(("fastapi", "openenv.core.env_server", "uvicorn"), "the OpenEnv server", INSTALL_HINT, ServeUnavailable)
