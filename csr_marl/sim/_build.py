"""Which build of the core is running, and whether a compiled one still matches its sources."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

STALE_AFTER_SECONDS = 2.0  # a source this much newer than its compiled module was edited after the build
REBUILD = (
    "rebuild it (CSR_MARL_USE_MYPYC=1 pip install -e .) or remove the compiled files to run the sources "
    "(python tools/csr_marl_build.py --clean)"
)


def stale_modules(package: str = __package__) -> list[str]:
    """The package's compiled modules whose source (``.py`` beside it) changed after the build."""
    stale = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not name.startswith(f"{package}.") or path is None or path.endswith(".py"):
            continue
        source = Path(path).with_name(name.rsplit(".", 1)[1] + ".py")
        try:
            if source.stat().st_mtime > Path(path).stat().st_mtime + STALE_AFTER_SECONDS:
                stale.append(source.name)
        except OSError:  # no source beside it: nothing to be stale against
            continue
    return sorted(stale)


def warn_if_stale() -> None:
    """Warn once at import when the compiled core is older than its sources: the code that runs is
    not the code in the files (an editable install compiled, then edited)."""
    stale = stale_modules()
    if stale:
        warnings.warn(
            f"the compiled core is older than its sources ({', '.join(stale)} changed after the build): {REBUILD}",
            RuntimeWarning,
            stacklevel=3,
        )
