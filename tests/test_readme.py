"""The README's environment and library snippets run as written (each in a fresh interpreter)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTIONS = ("## The PettingZoo environment", "## Use it from your library", "## Language models: text and tool calls")
NEEDS = {
    "tianshou": "tianshou", "torchrl": "torchrl", "supersuit": "supersuit", "stable_baselines3": "stable_baselines3",
    "sb3_contrib": "sb3_contrib", "ray": "ray.rllib", "csr_marl.train": "tianshou",
}


def snippets() -> list[tuple[str, str]]:
    text = README.read_text()
    found = []
    for heading in SECTIONS:
        start = text.index(heading)
        end = text.find("\n## ", start + len(heading))
        section = text[start : end if end != -1 else len(text)]
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", section, re.S)):
            found.append((f"{heading[3:].split()[0].lower()}-{i}", code))
    return found


@pytest.mark.parametrize("name,code", snippets(), ids=[name for name, _ in snippets()])
def test_snippet_runs_as_written(name, code):
    for module, probe in NEEDS.items():
        if re.search(rf"^(from|import) {module}\b", code, re.M):
            pytest.importorskip(probe)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=README.parent)
    assert done.returncode == 0, done.stderr[-3000:]
