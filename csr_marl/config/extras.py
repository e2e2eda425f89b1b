"""Optional extras: import a group of packages, or fail with one line naming the extra to install."""

from __future__ import annotations

import importlib


def require_modules(modules: tuple[str, ...], what: str, hint: str, error: type[ImportError]) -> None:
    """Import each of ``modules``; on the first missing one raise ``error`` saying ``what`` needs it and
    how to install it (``hint``)."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as exc:
        raise error(f"{what} needs {exc.name or modules[0]}: {hint}") from exc
