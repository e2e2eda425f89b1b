"""csr_marl's build backend: setuptools', with the core compiled by mypyc where a C compiler exists.

What each install gives (``CSR_MARL_USE_MYPYC``: unset, ``1`` or ``0``):

* a wheel, and so ``pip install .`` and ``pip install csr-marl``: the compiled core when a C compiler
  and Python's headers are found (:func:`toolchain_problem`), else the pure-Python package and one
  line saying why; ``CSR_MARL_USE_MYPYC=0`` asks for the pure package, ``1`` insists on compiling;
* an editable install (``pip install -e .``): the pure-Python package, the developer's install, unless
  ``CSR_MARL_USE_MYPYC=1`` asks for the compiled one.

The compiled part is the simulation core and the built-in policies (``csr_marl/sim``,
``csr_marl/policies``, but for the modules in :data:`INTERPRETED`) and the environments' per-step
modules (:data:`COMPILED_ENV_MODULES`), compiled into C extensions with mypyc, the compiler mypy and
black are built with: the same code, the same results seed for seed, run faster (README). mypy joins the
build environment only to compile. Every compiled file lies inside the package (mypyc's shared library
is ``csr_marl/_core__mypyc``), so whatever finds ``csr_marl`` finds the compiled core: reinstalling with
other extras keeps it working. An editable install puts the compiled modules beside their sources, and
Python imports them first: after editing the core, rebuild, or remove them (``python
tools/csr_marl_build.py --clean``). A compiled module older than its source warns at import.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import os
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
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
# mypyc puts the compiled code in one shared library, <GROUP>__mypyc.<suffix>: inside the package, so
# that any finder of csr_marl finds it (an editable install's finder maps csr_marl alone). Each module's
# own extension is a small shim into it, which a rebuild leaves as it was when its module's C did not
# change. So a build's time is the library's (csr_marl/sim/_build.py reads it).
GROUP = "csr_marl._core"
# What kind of build runs: the backend's build_wheel and build_editable hooks say it (a wheel compiles
# by default, an editable install does not); setup.py run by hand (build_ext --inplace) is "other".
_KIND = "_CSR_MARL_BUILD_KIND"


def requested() -> str | None:
    """``CSR_MARL_USE_MYPYC`` as asked: ``"1"``, ``"0"`` or None (unset: the build kind's default)."""
    value = os.environ.get(USE_MYPYC, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{USE_MYPYC} must be 1 (compile the core with mypyc), 0 or unset, got {value!r}")
    return value or None


def toolchain_problem() -> str | None:
    """Why the core cannot be compiled here (no C compiler, no Python headers), or None when it can:
    a one-file C program that includes Python.h is compiled, as the build would."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"Python's headers are missing ({headers}; e.g. apt install python3-dev)"
    try:
        import setuptools  # noqa: F401  (provides distutils on Python 3.12+)
        from distutils.ccompiler import new_compiler
        from distutils.sysconfig import customize_compiler

        compiler = new_compiler()
        customize_compiler(compiler)
        with tempfile.TemporaryDirectory() as folder:
            probe = Path(folder) / "probe.c"
            probe.write_text("#include <Python.h>\nint probe(void) { return 0; }\n")
            compiler.compile([str(probe)], output_dir=folder, include_dirs=[str(headers.parent)])
    except Exception as error:  # CompileError, a missing executable (OSError), a platform without one
        return f"no working C compiler ({' '.join(str(error).split())[:160]})"
    return None


def compiling() -> bool:
    """Whether this build compiles the core: asked for (``CSR_MARL_USE_MYPYC=1``), or a wheel's build
    with the variable unset and a C compiler and Python's headers found (else one line says why not)."""
    asked = requested()
    if asked is not None:
        return asked == "1"
    if os.environ.get(_KIND) != "wheel":
        return False
    if "wheel" not in _decided:
        problem = toolchain_problem()
        if problem is not None:
            pure_notice(problem)
        _decided["wheel"] = problem is None
    return _decided["wheel"]


_decided: dict[str, bool] = {}  # this process's answer for a default build (the notice is printed once)
_why_pure: list[str] = []  # why a default wheel build fell back to the pure core (PURE_NOTE records it)
# In a pure wheel built by default, why it is pure: pip shows a build's output only with -v, so the
# installed package carries the reason, and `csr-marl --version` prints it (csr_marl/_core_build.py).
PURE_NOTE = Path("csr_marl") / "_pure_core.txt"


def pure_notice(reason: str) -> None:
    """The one line a default build prints when it falls back to the pure-Python core."""
    _why_pure.append(reason)
    print(f"csr-marl: building the pure-Python core (slower, same results): {reason}", file=sys.stderr)


# Left as Python: the packages' __init__; the modules that define exceptions (a compiled class cannot
# subclass a built-in exception): errors.py, and work.py (the server's work limits, off the hot path);
# result.py (one object a run), whose NaNs must be the one math.nan object (SimulationResult);
# _build.py, which checks at import that the compiled modules still match their sources; and
# baselines.py (the text classifier's policy: scikit-learn does its work).
INTERPRETED = frozenset({"__init__.py", "_build.py", "errors.py", "result.py", "work.py", "baselines.py"})


def compiled_files(root: Path = Path(".")) -> list[Path]:
    """What a compiled editable install left in the source tree: the core's extension modules and
    mypyc's shared library in the package (``python tools/csr_marl_build.py --clean`` removes them)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    built = [path for package in (*COMPILED_PACKAGES, ENV_PACKAGE) for path in (root / package).iterdir()]
    built += (root / "csr_marl").glob("*__mypyc*")
    built += root.glob("*__mypyc*")  # where builds before the library moved into the package put it
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
    try:
        from mypyc.build import mypycify
    except ImportError:  # a build without isolation in an environment without mypy
        if requested() == "1":
            raise
        pure_notice(f"mypyc is not installed here ({MYPY} compiles the core)")
        return []

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
            if _why_pure:
                (Path(self.build_lib) / PURE_NOTE).write_text(_why_pure[-1] + "\n")

    return {"build_py": BuildPyWithScenarios}


def _build_requires() -> list[str]:
    # Beyond pyproject.toml's build requirements: mypy, only to compile. (setuptools' own hooks would
    # run setup.py to ask, which needs mypy already there when compiling; setup.py asks for nothing.)
    return [MYPY] if compiling() else []


def _as(kind: str, hook: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a backend hook as a build of ``kind`` (``wheel``, ``editable``): setup.py, run inside the
    hook, reads it (:func:`compiling`)."""
    before = os.environ.get(_KIND)
    os.environ[_KIND] = kind
    try:
        return hook(*args, **kwargs)
    finally:
        if before is None:
            del os.environ[_KIND]
        else:
            os.environ[_KIND] = before


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _as("wheel", _build_requires)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _as("editable", _build_requires)


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    """A wheel: with the compiled core where it can be built (:func:`compiling`)."""
    return _as("wheel", _setuptools.build_wheel, wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """An editable install: pure Python unless ``CSR_MARL_USE_MYPYC=1``."""
    return _as("editable", _setuptools.build_editable, wheel_directory, config_settings, metadata_directory)


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
