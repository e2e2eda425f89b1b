"""Imports point one way (docs/contributing.md): the core never imports RL packages."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "csr_marl"
FORBIDDEN = {"pettingzoo", "gymnasium"}
CORE = ("config", "sim", "analysis")


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_sources_do_not_import_rl_packages() -> None:
    for layer in CORE:
        for path in (PACKAGE / layer).rglob("*.py"):
            assert not imported_modules(path) & FORBIDDEN, f"{path.relative_to(PACKAGE)} imports an RL package"


def test_simulate_runs_without_loading_rl_packages() -> None:
    code = (
        "import sys, csr_marl; csr_marl.simulate('mmc', seed=0, overrides={'horizon_minutes': 30, 'warmup_minutes': 0}); "
        "bad = [m for m in ('pettingzoo', 'gymnasium') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_sim_does_not_import_upper_layers() -> None:
    for path in (PACKAGE / "sim").rglob("*.py"):
        source = path.read_text()
        for upper in ("policies", "envs", "whatif", "cli"):
            assert f"from ..{upper}" not in source and f"csr_marl.{upper}" not in source, path.name
