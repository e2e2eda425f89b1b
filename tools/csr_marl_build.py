"""csr_marl's build backend: setuptools', and with ``CSR_MARL_USE_MYPYC=1`` the core compiled by mypyc.

``pip install -e .`` builds the pure-Python package. ``CSR_MARL_USE_MYPYC=1 pip install -e .`` compiles
the simulation core and the built-in policies (``csr_marl/sim``, ``csr_marl/policies``, but for the
modules in :data:`INTERPRETED`), and the environments' per-step modules (:data:`COMPILED_ENV_MODULES`)
into C extensions with mypyc, the compiler mypy and black are built
with: the same code, the same results seed for seed, run faster (see the benchmarks pages). It needs a
C compiler and Python's headers; mypy is added to the build environment only then. An editable install
puts the compiled modules beside their sources, and Python imports them first: after editing the core,
rebuild, or remove them (``python tools/csr_marl_build.py --clean``). A compiled module older than its
source warns at import.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import os
from pathlib import Path
from typing import Any

from setuptools.build_meta import *  # noqa: F401,F403  (every hook this module does not wrap)

USE_MYPYC = "CSR_MARL_USE_MYPYC"
MYPY = "mypy==2.4.1"  # the version the core is checked and compiled with
# What is compiled: every module of these packages but those left as Python (INTERPRETED), and the
# environments' per-step modules (COMPILED_ENV_MODULES: the observation, its text features, the rewards,
# the driver that acts and builds infos, and the views PettingZoo reads rewards and infos through). The
# environment classes stay Python: users and libraries subclass them, and an interpreted class cannot
# subclass a compiled one.
COMPILED_PACKAGES = (Path("csr_marl") / "sim", Path("csr_marl") / "policies")
ENV_PACKAGE = Path("csr_marl") / "envs"
COMPILED_ENV_MODULES = ("observations.py", "rewards.py", "text_hashing.py", "driver.py", "views.py")
# mypyc puts the compiled code in one shared library beside the package, csr_marl__mypyc.<suffix>; each
# module's own extension is a small shim into it, which a rebuild leaves as it was when its module's C
# did not change. So a build's time is the library's (csr_marl/sim/_build.py reads it).
GROUP = "csr_marl"


def compiling() -> bool:
    """Whether this build compiles the core (``CSR_MARL_USE_MYPYC=1``)."""
    value = os.environ.get(USE_MYPYC, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{USE_MYPYC} must be 1 (compile the core with mypyc), 0 or unset, got {value!r}")
    return value == "1"


# Left as Python: the packages' __init__; the modules that define exceptions (a compiled class cannot
# subclass a built-in exception): errors.py, and work.py (the server's work limits, off the hot path);
# result.py (one object a run), whose NaNs must be the one math.nan object (SimulationResult);
# _build.py, which checks at import that the compiled modules still match their sources; and
# baselines.py (the text classifier's policy: scikit-learn does its work).
INTERPRETED = frozenset({"__init__.py", "_build.py", "errors.py", "result.py", "work.py", "baselines.py"})


def compiled_files(root: Path = Path(".")) -> list[Path]:
    """What a compiled editable install left in the source tree: the core's extension modules and
    mypyc's shared library beside the package (``python tools/csr_marl_build.py --clean`` removes them)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    built = [path for package in (*COMPILED_PACKAGES, ENV_PACKAGE) for path in (root / package).iterdir()]
    built += root.glob("*__mypyc*")
    return sorted(path for path in built if path.name.endswith(suffixes))


def compiled_modules(root: Path = Path(".")) -> list[str]:
    """The source files mypyc compiles, relative to the project's root."""
    modules = [
        path for package in COMPILED_PACKAGES for path in (root / package).glob("*.py") if path.name not in INTERPRETED
    ]
    modules += [root / ENV_PACKAGE / name for name in COMPILED_ENV_MODULES]
    return sorted(str(path.relative_to(root)) for path in modules)


def ext_modules() -> list[Any]:
    """setup.py's extension modules: the compiled core, or none for the pure-Python package."""
    if not compiling():
        return []
    from mypyc.build import mypycify

    # The build environment holds mypy alone: the dependencies' types are unknown there (Any).
    return mypycify(
        ["--ignore-missing-imports", "--follow-imports=silent", *compiled_modules()], opt_level="3", group_name=GROUP
    )


# The named scenarios and ticket banks live in the checkout's scenarios/ folder, beside the package. An
# editable install reads them there; a wheel carries a copy inside the package (SHIPPED_SCENARIOS),
# which csr_marl.config.loading.scenarios_dir() finds.
SCENARIOS = Path("scenarios")
SHIPPED_SCENARIOS = Path("csr_marl") / "_scenarios"


def cmdclass() -> dict[str, Any]:
    """setup.py's commands: setuptools' ``build_py``, which for a wheel also copies ``scenarios/`` into
    the built package as ``csr_marl/_scenarios``."""
    import shutil

    from setuptools.command.build_py import build_py

    class BuildPyWithScenarios(build_py):  # type: ignore[misc]
        def run(self) -> None:
            super().run()
            if getattr(self, "editable_mode", False):
                return  # an editable install reads the checkout's own folder
            source = Path(__file__).resolve().parents[1] / SCENARIOS
            if not source.is_dir():
                raise FileNotFoundError(f"{source}: the scenarios to ship are missing")
            shutil.copytree(source, Path(self.build_lib) / SHIPPED_SCENARIOS, dirs_exist_ok=True)

    return {"build_py": BuildPyWithScenarios}


def _build_requires() -> list[str]:
    # Beyond pyproject.toml's build requirements: mypy, only to compile. (setuptools' own hooks would
    # run setup.py to ask, which needs mypy already there when compiling; setup.py asks for nothing.)
    return [MYPY] if compiling() else []


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _build_requires()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _build_requires()


def main() -> None:
    parser = argparse.ArgumentParser(description="The compiled core's files in this checkout.")
    parser.add_argument("--clean", action="store_true", help="remove them: the core runs from its sources again")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    for path in compiled_files(root):
        if args.clean:
            path.unlink()
        print(("removed " if args.clean else "") + str(path.relative_to(root)))


if __name__ == "__main__":
    main()
