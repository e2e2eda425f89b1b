"""A fresh clone's contributor sees what CI runs: the docs quote `.ci/run`, and every skip of an optional
extra names the extra to install."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from extras import EXTRA_OF, skip_reason

ROOT = Path(__file__).resolve().parents[1]
CI = (ROOT / ".ci" / "run").read_text()


def _ci_extras_install() -> str:
    found = re.search(r'^python -m pip install -e "(\.\[[\w,]+\])"', CI, re.M)
    assert found, "no editable install in .ci/run"
    return found.group(1)


@pytest.mark.parametrize("page", ["README.md", "docs/contributing.md"])
def test_the_docs_quote_the_extras_that_ci_installs(page: str) -> None:
    text = (ROOT / page).read_text()
    assert _ci_extras_install() in text
    assert "--full" in text and "torch==2.13.0" in text


@pytest.mark.parametrize("page", ["README.md", "docs/contributing.md"])
def test_the_docs_say_where_ci_gets_torch_as_ci_does(page: str) -> None:
    """CI installs torch by name from PyPI (its CUDA build on Linux x86-64); the docs must not claim a
    CPU build there."""
    assert re.search(r'pip install "torch==2\.13\.0"\s*$', CI, re.M), "CI's torch line changed: update the docs"
    text = " ".join((ROOT / page).read_text().split())
    assert "CUDA build, which CI accepts and never uses" in text
    assert "hold the CPU build" not in text


def test_ci_runs_the_readmes_full_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    *_, pytest_line = (line for line in CI.splitlines() if line.startswith("python -m pytest"))  # the suite: last
    assert f"python -m mkdocs build --strict && {pytest_line}\n" in readme


def test_every_skip_of_an_extra_names_the_extra() -> None:
    bare = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            call = re.search(r'pytest\.importorskip\("([\w.]+)"(.*)', line)
            if call and not call.group(1).startswith("csr_marl") and "extra" not in call.group(2):
                bare.append(f"{path.name}:{number}")
    assert not bare, f"use extras.need(), which names the extra: {bare}"


def test_each_extra_a_skip_names_exists_in_pyproject() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^([\w-]+) = \[", section, re.M))
    for module, extra in EXTRA_OF.items():
        assert extra in extras, (module, extra)
        assert f"pip install -e '.[{extra}]'" in skip_reason(module)
