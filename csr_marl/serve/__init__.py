"""The contact center as an OpenEnv environment server (the ``serve`` extra).

    csr-marl serve --scenario tasks/resolve --roles resolver --port 8000

    from csr_marl.serve.client import ContactCenterClient, ToolCallAction
    with ContactCenterClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        result = env.step(ToolCallAction(tool="check_payment", arguments={}))

:mod:`.environment` wraps a :class:`csr_marl.text.TextSession` in the framework's ``Environment``
(one per WebSocket session), :mod:`.models` holds the wire models, :mod:`.app` builds the framework's
FastAPI app, :mod:`.client` is the typed ``EnvClient``. What a public server needs: :mod:`.guard`
(limits, token, rate), :mod:`.sessions` (sessions per client, fair turns), :mod:`.clients` (who a
client is), :mod:`.wellformed` (text that can be sent back), :mod:`.connections` (sockets). The framework (the ``openenv`` package) is
imported on first use, so ``import csr_marl`` never needs it; without it, a one-line
:class:`ServeUnavailable` names the extra to install.
"""

from __future__ import annotations

from typing import Any

from .deps import INSTALL_HINT, ServeUnavailable, require_serve_extra

_LAZY = {
    "create_server_app": ".app",
    "run_server": ".app",
    "ContactCenterEnvironment": ".environment",
    "SessionDefaults": ".environment",
    "SessionOptionError": ".environment",
    "ContactCenterClient": ".client",
    "ToolCallAction": ".models",
    "ContactCenterObservation": ".models",
    "ContactCenterState": ".models",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'csr_marl.serve' has no attribute {name!r}")
    require_serve_extra()
    from importlib import import_module

    return getattr(import_module(_LAZY[name], __name__), name)


__all__ = ["INSTALL_HINT", "ServeUnavailable", "require_serve_extra", *_LAZY]
