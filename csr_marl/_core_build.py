"""Which core this install runs, compiled by mypyc or pure Python, found without importing it (so that
``csr-marl --version`` stays light). ``csr_marl.sim.COMPILED`` says the same once the core is imported."""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def compiled_core() -> bool:
    """Whether the core loads compiled: Python imports an extension module before a source beside it,
    and the build compiles ``csr_marl/sim/center.py`` with the rest of the core (tools/csr_marl_build.py)."""
    folder = PACKAGE / "sim"
    return any((folder / f"center{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def core_description() -> str:
    """One phrase for ``csr-marl --version``: which core runs, and how to get the compiled one."""
    if compiled_core():
        return "compiled core (mypyc)"
    note = PACKAGE / "_pure_core.txt"  # a wheel built without a compiler says why (tools/csr_marl_build.py)
    why = f"built without the compiled core: {note.read_text().strip()}; " if note.is_file() else ""
    return f"pure-Python core; {why}a C compiler at install time gives the compiled one, see the README"
