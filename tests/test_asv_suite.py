"""The speed benchmarks' history is kept by airspeed velocity (asv): ``asv.conf.json`` at the root and the
suite in ``benchmarks/asv_suite/``. These tests hold that the suite is found, that it tracks the ratios the
benchmark pages judge, and that each of them runs (at a tiny size: a timing is no test's business)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "asv_suite"
PREFIXES = ("time_", "track_", "peakmem_", "mem_", "timeraw_")
#: What the pages cite: the ratios the core and environment targets judge, and the build that ran.
TRACKED = {
    "core.Ratios.track_mmc_over_bare_simpy", "core.Ratios.track_mmc_over_ciw",
    "core.Ratios.track_standard_day_over_bare_simpy", "core.track_compiled_core", "core.Simulate.time_simulate",
    "env.Ratios.track_aec_over_bare_simpy", "env.Ratios.track_env_over_bare_simpy",
    "env.Ratios.track_parallel_over_aec", "env.Ratios.track_scale",
}


def asv_config() -> dict:
    """asv.conf.json (asv reads it as JSON with ``//`` comment lines)."""
    text = (ROOT / "asv.conf.json").read_text(encoding="utf-8")
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def suite_module(name: str) -> ModuleType:
    """A module of the suite, imported under a package name of its own, so that the test imports it
    from its file whatever is on ``sys.path``."""
    package = "csr_marl_asv_suite"
    if package not in sys.modules:
        spec = importlib.util.spec_from_file_location(package, SUITE / "__init__.py", submodule_search_locations=[str(SUITE)])
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        spec.loader.exec_module(module)
    return importlib.import_module(f"{package}.{name}")


def discovered() -> set[str]:
    """The benchmark names asv would find, by its naming rules: module-level functions and methods of
    module-level classes whose names start with a benchmark prefix."""
    names = set()
    for path in sorted(SUITE.glob("[!_]*.py")):
        module = suite_module(path.stem)
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            if callable(value) and attr.startswith(PREFIXES):
                names.add(f"{path.stem}.{attr}")
            elif isinstance(value, type):
                names.update(f"{path.stem}.{attr}.{method}" for method in vars(value) if method.startswith(PREFIXES))
    return names


def test_the_config_points_at_the_suite() -> None:
    config = asv_config()
    assert (ROOT / config["benchmark_dir"]).resolve() == SUITE
    assert config["repo"] == "."
    assert not config["env_dir"].startswith("benchmarks")  # environments stay out of the tracked tree
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8")
    assert "/.asv/" in ignored and config["env_dir"].startswith(".asv") and config["html_dir"].startswith(".asv")


def test_the_suite_tracks_the_judged_ratios() -> None:
    assert TRACKED <= discovered()


@pytest.mark.slow
def test_the_ratios_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ratio of the core and the AEC/parallel envs, at a tiny size: a positive, finite number."""
    core, env = suite_module("core"), suite_module("env")
    monkeypatch.setattr(core, "ARRIVALS", 400)
    monkeypatch.setattr(core, "DAY_ARRIVALS", 200)
    monkeypatch.setattr(env, "ARRIVALS", 400)
    monkeypatch.setattr(env, "AGENT_STEPS", 200)
    ratios, env_ratios = core.Ratios(), env.Ratios()
    env_ratios.setup()
    values = [ratios.track_mmc_over_bare_simpy(), ratios.track_standard_day_over_bare_simpy(),
              env_ratios.track_aec_over_bare_simpy(), env_ratios.track_env_over_bare_simpy(),
              env_ratios.track_parallel_over_aec()]
    assert all(math.isfinite(v) and v > 0 for v in values), values
    assert core.track_compiled_core() in (0, 1)
    simulate = core.Simulate()
    for scenario in core.Simulate.params:
        simulate.setup(scenario)
        simulate.time_simulate(scenario)


@pytest.mark.slow
def test_asv_discovers_the_suite() -> None:
    """``asv check`` imports the suite the way ``asv run`` does, in the installed environment."""
    pytest.importorskip("asv", reason="asv is in no extra: pip install asv")
    done = subprocess.run([sys.executable, "-m", "asv", "check", "--python=same"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "No problems found" in done.stdout, done.stdout + done.stderr
