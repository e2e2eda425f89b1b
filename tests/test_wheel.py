"""The release as users install it: a wheel, built as ``pip install .`` builds it, installed into a
fresh environment, carries the named scenarios and ticket banks, runs the compiled core where a C
compiler exists, and gives the same results seed for seed as the sources.

The wheel compiles the core by default when a C compiler and Python's headers are found
(tools/csr_marl_build.py), else it is the pure-Python package. The scenarios live in the checkout's
``scenarios/`` folder, beside the package; an editable install reads them there, and the build copies
them into a wheel as ``csr_marl/_scenarios``. CI runs this file as a step of its own (.ci/run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from checkout import ROOT, copy_project
from extras import need

sys.path.insert(0, str(ROOT / "tools"))
import csr_marl_build  # noqa: E402  (the build backend, from the checkout)

# One process builds the wheel once for every test here (a compiled build takes minutes).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the Python of a fresh environment it is installed into). Built from a copy of the
    checkout (a build writes into the tree it builds) without build isolation, and installed without
    dependencies: the environment sees this one's packages (``--system-site-packages``), so nothing is
    downloaded, but the package it imports is the wheel's."""
    need("setuptools")  # building without isolation uses this environment's setuptools
    tree = copy_project(tmp_path_factory.mktemp("tree"))
    if tree is None:
        pytest.skip("needs git to copy the checkout's files")
    wheels, home = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("venv")
    env = {key: value for key, value in os.environ.items() if key not in (csr_marl_build.USE_MYPYC, "PYTHONPATH")}
    pip = ["-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([sys.executable, *pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                            str(tree)], env=env, capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = wheels.glob("csr_marl-*.whl")
    venv.create(home, system_site_packages=True, with_pip=False)  # pip: this environment's
    python = home / "bin" / "python"
    done = subprocess.run([str(python), *pip, "install", "--no-deps", str(wheel)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return wheel, python


def run_installed(python: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python args`` from another folder than the checkout, as a user's script runs."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "CSR_MARL_SCENARIOS")}
    done = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_wheel_carries_every_scenario_and_bank(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    shipped = {
        name.removeprefix("csr_marl/_scenarios/")
        for name in zipfile.ZipFile(wheel).namelist() if name.startswith("csr_marl/_scenarios/")
    }
    in_checkout = {path.relative_to(ROOT / "scenarios").as_posix()
                   for path in (ROOT / "scenarios").rglob("*") if path.is_file()}
    assert "standard_day.yaml" in shipped and "tickets/default.yaml" in shipped
    assert shipped == in_checkout


def test_the_wheel_runs_the_compiled_core_where_a_compiler_exists(installed: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, python = installed
    names = zipfile.ZipFile(wheel).namelist()
    compiled = csr_marl_build.toolchain_problem() is None
    # every compiled file inside the package, so that whatever finds csr_marl finds them
    assert any(name.startswith("csr_marl/_core__mypyc.") for name in names) == compiled
    assert not [name for name in names if not name.startswith(("csr_marl/", "csr_marl-"))]
    version = run_installed(python, ["-m", "csr_marl", "--version"], tmp_path).stdout
    assert version.startswith("csr-marl ") and ("(compiled core" if compiled else "(pure-Python core") in version
    which = run_installed(python, ["-c", "import csr_marl.sim as s; print(s.COMPILED, s.__file__)"], tmp_path)
    flag, path = which.stdout.split()
    assert flag == str(compiled) and Path(path).is_relative_to(python.parent.parent)


def test_an_installed_wheel_runs_the_default_scenario(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """From another folder, as a user's script would: the installed package, not the checkout, loads
    ``standard_day`` by name and simulates it, and the CLI's main job runs."""
    _, python = installed
    script = (
        "import csr_marl\n"
        "from csr_marl.config.loading import scenario_names, scenarios_dir\n"
        "print(csr_marl.__file__)\n"
        "print(scenarios_dir())\n"
        "print(','.join(scenario_names()))\n"
        "print(csr_marl.simulate('standard_day', seed=1).flow['arrived'])\n"
    )
    package, scenarios, names, arrived = run_installed(python, ["-c", script], tmp_path).stdout.split("\n")[:4]
    assert Path(package).is_relative_to(python.parent.parent)
    assert Path(scenarios) == Path(package).parent / "_scenarios"
    assert {"standard_day", "surge", "night_shift"} <= set(names.split(","))
    assert int(arrived) > 100
    cli = run_installed(python, ["-m", "csr_marl", "simulate", "standard_day"], tmp_path)
    assert "service" in cli.stdout.lower()


def test_the_installed_wheel_gives_the_sources_results_seed_for_seed(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """simulate, the core driven decision by decision, and an AEC episode: the same digests from the
    installed wheel (compiled where it could be) as from the checkout's sources in this process."""
    _, python = installed
    import trace_digests

    cases = {
        "simulate": ("simulate_digest", ("mmc", "heuristic", 0)),
        "center": ("center_digest", ("standard_day", 3)),
        "aec": ("aec_digest", ("standard_day", 2)),
    }
    script = (
        f"import json, sys; sys.path.insert(0, {str(TESTS)!r}); import trace_digests, csr_marl\n"
        f"assert not csr_marl.__file__.startswith({str(ROOT)!r}), csr_marl.__file__\n"
        f"cases = {cases!r}\n"
        "print(json.dumps({name: getattr(trace_digests, f)(*args) for name, (f, args) in cases.items()}))\n"
    )
    theirs = json.loads(run_installed(python, ["-c", script], tmp_path).stdout)
    ours = {name: getattr(trace_digests, function)(*args) for name, (function, args) in cases.items()}
    assert theirs == ours
