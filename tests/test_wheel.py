"""A wheel, installed without ``-e``, carries the named scenarios and ticket banks and runs the main job.

The scenarios live in the checkout's ``scenarios/`` folder, beside the package; an editable install
reads them there, and the build copies them into a wheel as ``csr_marl/_scenarios``
(``tools/csr_marl_build.py``). Before that copy, an installed wheel knew no scenario at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from checkout import ROOT, copy_project
from extras import need

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the folder it is installed into), built from a copy of the checkout (a build writes
    into the tree it builds), without build isolation or dependencies: this environment has them."""
    need("setuptools")  # building without isolation uses this environment's setuptools
    tree = copy_project(tmp_path_factory.mktemp("tree"))
    if tree is None:
        pytest.skip("needs git to copy the checkout's files")
    wheels, site = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(tree)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("csr_marl-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return wheel, site


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


def test_an_installed_wheel_runs_the_default_scenario(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """From another folder, as a user's script would: the installed package, not the checkout, loads
    ``standard_day`` by name and simulates it, and the CLI's main job runs."""
    _, site = installed
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("CSR_MARL_SCENARIOS", None)
    script = (
        "import csr_marl\n"
        "from csr_marl.config.loading import scenario_names, scenarios_dir\n"
        "print(csr_marl.__file__)\n"
        "print(scenarios_dir())\n"
        "print(','.join(scenario_names()))\n"
        "print(csr_marl.simulate('standard_day', seed=1).flow['arrived'])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    package, scenarios, names, arrived = out.stdout.split("\n")[:4]
    assert Path(package).is_relative_to(site)
    assert Path(scenarios) == site / "csr_marl" / "_scenarios"
    assert {"standard_day", "surge", "night_shift"} <= set(names.split(","))
    assert int(arrived) > 100
    cli = subprocess.run([sys.executable, "-m", "csr_marl", "simulate", "standard_day"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert "service" in cli.stdout.lower()
