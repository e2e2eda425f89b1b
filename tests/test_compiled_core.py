"""The compiled core (``CSR_MARL_USE_MYPYC=1 pip install .``, tools/csr_marl_build.py): mypyc compiles
only sources that type-check, the build compiles the modules it says, and a compiled core older than
its sources says so at import. CI also runs the fast suite against the compiled build (.ci/run)."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from checkout import copy_project
from csr_marl.sim import _build

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import csr_marl_build  # noqa: E402  (the build backend, from the checkout)


@pytest.mark.slow
def test_the_core_type_checks_as_mypyc_needs_it(tmp_path) -> None:
    # mypyc refuses to compile code mypy rejects, and a wrong annotation becomes a runtime TypeError
    # in the compiled core: so the sources must type-check, with the flags the build uses.
    pytest.importorskip("mypy", reason="the dev extra installs mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
         "--cache-dir", str(tmp_path), *csr_marl_build.compiled_modules(ROOT)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_build_compiles_the_core_but_what_must_stay_python() -> None:
    packages = [ROOT / "csr_marl" / "sim", ROOT / "csr_marl" / "policies"]
    sources = {str(path.relative_to(ROOT)) for package in packages for path in package.glob("*.py")}
    names = {Path(source).name for source in sources}
    assert csr_marl_build.INTERPRETED <= names  # no stale name: each kept file exists
    env_modules = {f"csr_marl/envs/{name}" for name in csr_marl_build.COMPILED_ENV_MODULES}
    assert all((ROOT / module).is_file() for module in env_modules)
    compiled = set(csr_marl_build.compiled_modules(ROOT))
    assert compiled == {source for source in sources if Path(source).name not in csr_marl_build.INTERPRETED} | env_modules
    assert {"csr_marl/sim/center.py", "csr_marl/sim/staff.py", "csr_marl/policies/heuristic.py"} <= compiled
    assert {"csr_marl/envs/observations.py", "csr_marl/envs/rewards.py", "csr_marl/envs/driver.py"} <= compiled
    # the env classes stay Python: an interpreted class (a user's, a library's) cannot subclass a compiled one
    assert not {"csr_marl/envs/aec.py", "csr_marl/envs/parallel.py", "csr_marl/envs/common.py"} & compiled
    # the staleness check at import looks where the build compiles
    packages = (*csr_marl_build.COMPILED_PACKAGES, csr_marl_build.ENV_PACKAGE)
    assert [str(package) for package in packages] == [f"csr_marl/{p}" for p in _build.PACKAGES]


def test_mypy_joins_the_build_only_to_compile(monkeypatch) -> None:
    monkeypatch.delenv(csr_marl_build.USE_MYPYC, raising=False)
    monkeypatch.setattr(csr_marl_build, "_decided", {})
    assert csr_marl_build.get_requires_for_build_editable() == []  # the developer's install: pure
    assert csr_marl_build.ext_modules() == []  # setup.py by hand: pure unless asked
    # a wheel (pip install ., pip install csr-marl from a source distribution): compiled where it can be
    can_compile = csr_marl_build.toolchain_problem() is None
    assert csr_marl_build.get_requires_for_build_wheel() == ([csr_marl_build.MYPY] if can_compile else [])
    assert csr_marl_build._KIND not in os.environ  # the hook's kind does not outlive it
    monkeypatch.setenv(csr_marl_build.USE_MYPYC, "0")
    assert csr_marl_build.get_requires_for_build_wheel() == []
    monkeypatch.setenv(csr_marl_build.USE_MYPYC, "1")
    assert csr_marl_build.get_requires_for_build_editable() == [csr_marl_build.MYPY]
    monkeypatch.setenv(csr_marl_build.USE_MYPYC, "yes")
    with pytest.raises(ValueError, match="CSR_MARL_USE_MYPYC must be 1"):
        csr_marl_build.compiling()


def test_a_wheel_without_a_c_compiler_is_pure_and_says_why_in_one_line(monkeypatch, capsys) -> None:
    monkeypatch.delenv(csr_marl_build.USE_MYPYC, raising=False)
    monkeypatch.setattr(csr_marl_build, "_decided", {})
    monkeypatch.setenv("CC", "/nonexistent/cc")  # what distutils compiles with
    problem = csr_marl_build.toolchain_problem()
    assert problem is not None and problem.startswith("no working C compiler")
    capsys.readouterr()
    assert csr_marl_build.get_requires_for_build_wheel() == []  # no mypy to fetch
    monkeypatch.setenv(csr_marl_build._KIND, "wheel")
    assert csr_marl_build.ext_modules() == []  # the pure package
    notice = capsys.readouterr().err.splitlines()
    assert notice == [f"csr-marl: building the pure-Python core (slower, same results): {problem}"]  # once


def test_the_version_line_says_which_core_runs() -> None:
    from csr_marl import _core_build
    from csr_marl.sim import COMPILED

    assert _core_build.compiled_core() == COMPILED
    assert _core_build.core_description().startswith("compiled core" if COMPILED else "pure-Python core")


def test_a_compiled_module_older_than_its_source_is_named(tmp_path) -> None:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for package in _build.PACKAGES:
        (tmp_path / package).mkdir()
    for name, edited in (("fresh", False), ("edited", True), ("orphan", None)):
        compiled = tmp_path / "sim" / f"{name}{suffix}"
        compiled.write_bytes(b"")
        if edited is not None:
            source = compiled.with_name(f"{name}.py")
            source.write_text("")
            stamp = compiled.stat().st_mtime + (10 * _build.STALE_AFTER_SECONDS if edited else 0.0)
            os.utime(source, (stamp, stamp))
    (tmp_path / "policies" / "heuristic.py").write_text("")  # a source with nothing compiled: the pure build
    assert _build.stale_modules(tmp_path) == ["sim/edited.py"]
    assert _build.stale_modules() == []  # this checkout's core, whichever build it runs


def test_a_rebuild_that_left_a_module_s_shim_as_it_was_is_not_stale(tmp_path) -> None:
    # mypyc keeps the code in one shared library beside the package; a rebuild rewrites it, but a
    # module's own extension (a shim) keeps its old time when nothing in it changed.
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    root = tmp_path / "csr_marl"
    (root / "envs").mkdir(parents=True)
    shim, source = root / "envs" / f"driver{suffix}", root / "envs" / "driver.py"
    shim.write_bytes(b"")
    source.write_text("")
    edited = shim.stat().st_mtime + 10 * _build.STALE_AFTER_SECONDS
    os.utime(source, (edited, edited))
    assert _build.stale_modules(root) == ["envs/driver.py"]  # no library: the shim's time is the build's
    library = root / f"{_build.LIBRARY}{suffix}"  # inside the package, where the build puts it
    library.write_bytes(b"")
    os.utime(library, (edited + 1, edited + 1))  # rebuilt after the edit
    assert _build.stale_modules(root) == []
    os.utime(library, (edited - 10 * _build.STALE_AFTER_SECONDS,) * 2)  # built before it
    assert _build.stale_modules(root) == ["envs/driver.py"]
    assert csr_marl_build.GROUP + "__mypyc" == f"csr_marl.{_build.LIBRARY}"  # the name the build gives it


# Tests the compiled build must pass as the sources do: the pinned digests of whole episodes (core, AEC,
# parallel), the files whose failures once showed where the compiled core behaved otherwise
# (annotations narrower than the values: NaN identity, ints made floats, class constants, seeds), and
# those of the compiled env modules (observations, text features, rewards, the driver, the views) and the
# APIs over them, the illegal-action warning's line (found by walking frames, which compiled code lacks).
COMPILED_CHECKS = (
    "tests/test_identical_results.py", "tests/test_responses.py", "tests/test_sim.py",
    "tests/test_cli_robustness.py", "tests/test_ticket_bank.py", "tests/test_customers.py",
    "tests/test_text_noise.py", "tests/test_random.py", "tests/test_env_observations.py",
    "tests/test_env_rewards.py", "tests/test_env_aec.py", "tests/test_env_parallel.py", "tests/test_env_api.py",
    "tests/test_env_illegal_warning.py", "tests/test_episode_memory.py", "tests/test_consumer_pettingzoo.py",
)


@dataclass(frozen=True)
class CompiledInstall:
    tree: Path  # a copy of the checkout, its core compiled in place
    python: str  # a fresh environment's Python, the tree installed into it (editable)
    install: list[str]  # ``pip install -e`` in that environment
    env: dict[str, str]  # the environment a user's shell has: no PYTHONPATH, no CSR_MARL_USE_MYPYC


# Both tests below use one compiled build (the compile takes minutes): with -n, in one process.
compiled_build = pytest.mark.xdist_group("compiled-build")


@pytest.fixture(scope="module")
def compiled_install(tmp_path_factory: pytest.TempPathFactory) -> CompiledInstall:
    """``CSR_MARL_USE_MYPYC=1 pip install -e .`` of a copy of the checkout (the build writes into the tree
    it compiles) into a fresh environment that sees this one's packages: the compiled modules lie beside
    their sources, so the tree also runs compiled from ``PYTHONPATH``."""
    pytest.importorskip("mypy", reason="the dev extra installs mypy")
    if csr_marl_build.toolchain_problem() is not None:
        pytest.skip("no C compiler: the compiled core cannot be built here")
    tree = copy_project(tmp_path_factory.mktemp("compiled") / "tree")
    if tree is None:
        pytest.skip("needs git to copy the checkout's files (the build writes into the tree it compiles)")
    home = tree.parent / "venv"
    venv.create(home, system_site_packages=True, with_pip=False)  # pip and the dependencies: this environment's
    python = str(home / "bin" / "python")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", csr_marl_build.USE_MYPYC)}
    install = [python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", "--no-build-isolation", "-e"]
    done = subprocess.run([*install, str(tree)], env={**env, csr_marl_build.USE_MYPYC: "1"}, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return CompiledInstall(tree, python, install, env)


@pytest.mark.slow
@compiled_build
def test_the_compiled_core_gives_the_same_results(compiled_install: CompiledInstall) -> None:
    tree = compiled_install.tree
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop(csr_marl_build.USE_MYPYC, None)
    which = subprocess.run([sys.executable, "-c", "import csr_marl.sim as s; print(s.COMPILED, s.__file__)"],
                           cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert which.stdout.split() == ["True", str(tree / "csr_marl" / "sim" / "__init__.py")], which.stderr
    checks = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *COMPILED_CHECKS],
                            cwd=tree, env=env, capture_output=True, text=True, timeout=1200)
    assert checks.returncode == 0, checks.stdout[-6000:]


@pytest.mark.slow
@compiled_build
def test_a_compiled_editable_install_keeps_working_as_extras_come_and_go(compiled_install: CompiledInstall,
                                                                         tmp_path: Path) -> None:
    """``CSR_MARL_USE_MYPYC=1 pip install -e .`` (the fixture), then ``pip install -e ".[dev]"`` (a pure
    rebuild whose editable finder maps ``csr_marl`` alone), then ``pip install -e .`` again: from another
    folder than the checkout, the compiled core still imports, an env steps and the CLI runs. Every
    compiled file lies inside the package, so whatever finds ``csr_marl`` finds them."""
    tree, python, env = compiled_install.tree, compiled_install.python, compiled_install.env
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    check = (
        "import csr_marl, csr_marl.sim as sim\n"
        f"assert csr_marl.__file__.startswith({str(tree)!r}) and sim.COMPILED, (csr_marl.__file__, sim.COMPILED)\n"
        "env = csr_marl.parallel_env('tasks/classify')\n"
        "observations, infos = env.reset(seed=0)\n"
        "for _ in range(20):\n"
        "    observations, *_, infos = env.step({a: int(infos[a]['action_mask'].argmax()) for a in env.agents})\n"
    )
    for step, target in enumerate([None, f"{tree}[dev]", str(tree)]):
        if target is not None:  # the first install is the fixture's
            done = subprocess.run([*compiled_install.install, target], env=env, capture_output=True, text=True,
                                  timeout=1800)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        target = target or f"{tree} with {csr_marl_build.USE_MYPYC}=1"
        ran = subprocess.run([python, "-c", check], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, f"after install {step} ({target}): {ran.stderr[-3000:]}"
        cli = subprocess.run([python, "-m", "csr_marl", "simulate", "standard_day"], cwd=elsewhere, env=env,
                             capture_output=True, text=True, timeout=300)
        assert cli.returncode == 0, f"after install {step} ({target}): {cli.stderr[-3000:]}"
        version = subprocess.run([python, "-m", "csr_marl", "--version"], cwd=elsewhere, env=env, capture_output=True, text=True)
        assert "(compiled core" in version.stdout
