"""The serve extra: the OpenEnv framework is optional, imported only when serving or connecting."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from ..config.extras import require_modules

INSTALL_HINT = "pip install -e \".[serve]\" (or pip install 'csr-marl[serve]')"


class ServeUnavailable(ImportError):
    """The OpenEnv framework (the ``openenv`` package) or its server parts are not installed."""


def require_serve_extra() -> None:
    """Import the OpenEnv framework and its web server, or fail with one line naming the extra."""
    with _without_the_web_ui():
        require_modules(("fastapi", "openenv.core.env_server", "uvicorn"), "the OpenEnv server", INSTALL_HINT, ServeUnavailable)


def web_ui_requested() -> bool:
    """Whether the framework's browser playground is asked for (``ENABLE_WEB_INTERFACE``, as OpenEnv reads it)."""
    return os.environ.get("ENABLE_WEB_INTERFACE", "false").lower() in ("true", "1", "yes")


@contextlib.contextmanager
def _without_the_web_ui() -> Iterator[None]:
    """Import the framework without its browser playground's toolkit (gradio: about 5 s of a server's
    start) unless the playground is asked for. The framework imports the playground where it can and
    carries on without it; a later request for it imports it then."""
    if web_ui_requested() or "gradio" in sys.modules:
        yield
        return
    sys.modules["gradio"] = None  # type: ignore[assignment]  # Python's own "not importable" marker
    try:
        yield
    finally:
        if sys.modules.get("gradio", ...) is None:
            del sys.modules["gradio"]
