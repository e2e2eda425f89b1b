"""Whether a compiled core still matches its sources (an editable install, compiled, then edited)."""

from __future__ import annotations

import importlib.machinery
import warnings
from pathlib import Path

STALE_AFTER_SECONDS = 2.0  # a source this much newer than its compiled module was edited after the build
PACKAGES = ("sim", "policies", "envs")  # where the build puts compiled modules (tools/csr_marl_build.py)
REBUILD = (
    "rebuild it (CSR_MARL_USE_MYPYC=1 pip install -e .) or remove the compiled files to run the sources "
    "(python tools/csr_marl_build.py --clean)"
)


LIBRARY = "_core__mypyc"  # the compiled code's shared library, in the package (tools/csr_marl_build.py)


def stale_modules(root: Path = Path(__file__).resolve().parents[1]) -> list[str]:
    """The compiled modules under ``root`` (csr_marl) whose source beside them changed after the build.

    A module's extension is a shim into mypyc's shared library, which holds the code; a rebuild
    rewrites the library but leaves a shim as it was when nothing in it changed. So the build's time is
    the newer of the shim's and the library's."""
    stale = []
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        library = root / f"{LIBRARY}{suffix}"
        built = library.stat().st_mtime if library.exists() else 0.0
        for package in PACKAGES:
            folder = root / package
            for compiled in folder.glob(f"*{suffix}"):
                source = folder / (compiled.name[: -len(suffix)] + ".py")
                try:
                    if source.stat().st_mtime > max(compiled.stat().st_mtime, built) + STALE_AFTER_SECONDS:
                        stale.append(f"{package}/{source.name}")
                except OSError:  # no source beside it: nothing to be stale against
                    continue
    return sorted(stale)


def warn_if_stale() -> None:
    """Warn at import when the compiled core is older than its sources: the code that runs is not the
    code in the files."""
    stale = stale_modules()
    if stale:
        warnings.warn(
            f"the compiled core is older than its sources ({', '.join(stale)} changed after the build): {REBUILD}",
            RuntimeWarning,
            stacklevel=3,
        )
