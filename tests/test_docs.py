"""Every code block of the docs site and the README runs as written.

The convention (also on the contributing page): a ``python`` block runs in a fresh interpreter from
the repository root; in a ``bash`` block, the lines that start with ``csr-marl`` or ``python`` run
(``csr-marl`` as ``python -m csr_marl``, so this checkout's code is used). An HTML comment on the line
right before a fence changes that: ``<!-- not-run: reason -->`` never runs the block,
``<!-- slow: reason -->`` runs it only in the full suite (``pytest --full``). Blocks that import an
extra that is not installed skip.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from extras import need, skip_reason

# With -n (pytest-xdist), the blocks of a page run in one process, in order (a block may read what an
# earlier block of its page wrote under runs/docs-*); the pages share out among the processes.

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<kind>not-run|slow):\s*(?P<reason>.+?)\s*-->\s*$")
RUN_LANGUAGES = ("python", "py", "bash", "sh", "shell", "console")
# A block importing (or a command needing) one of these needs the module on the right to be installed.
NEEDS = {
    "tianshou": "tianshou", "torchrl": "torchrl", "supersuit": "supersuit", "stable_baselines3": "stable_baselines3",
    "sb3_contrib": "sb3_contrib", "ray": "ray.rllib", "csr_marl.train": "tianshou", "openai": "openai",
    "csr_marl.serve": "openenv", "agilerl": "agilerl", "trl": "trl", "ortools": "ortools",
    "csr_marl.whatif.schedule": "ortools", "csr_marl.grpo": "trl",
}
COMMAND_NEEDS = {
    "train": "tianshou", "evaluate": "tianshou", "serve": "openenv", "agent": "openai",
    "calibrate": "scipy", "schedule": "ortools",
}
# Names in a block that need an extra whatever the block imports (a policy named by string).
WORD_NEEDS = {"text_classifier": "sklearn"}
TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str
    directive: str | None
    reason: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, with the directive on the line before each fence."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent = opening["indent"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page.name}:{i + 1}: unclosed code fence"
        before = DIRECTIVE.match(lines[i - 1]) if i > 0 else None
        code = textwrap.dedent("\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1 : end]))
        found.append(Block(page, i + 1, opening["lang"], code + "\n", before["kind"] if before else None, before["reason"] if before else ""))
        i = end + 1
    return found


def commands(code: str) -> list[str]:
    """The lines of a shell block that run: those starting with ``csr-marl`` or ``python`` (continuations joined)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if re.match(r"\s*(csr-marl|python)\s", line)]


ALL = [block for page in PAGES for block in blocks(page)]
RUNNABLE = [block for block in ALL if block.language in RUN_LANGUAGES and block.directive != "not-run"]


OUTPUT = re.compile(r"\bruns/(docs-[\w.-]+)")
_fresh: set[Path] = set()  # the pages whose outputs this process cleared


def fresh_outputs(page: Path) -> None:
    """Blocks write under runs/docs-<name>; a folder left by an older run could hold another study
    (refused). Before a page's first block, the runs/docs-* paths the page names are removed (each
    page names its own: pages run in different processes)."""
    if page in _fresh:
        return
    _fresh.add(page)
    for name in set(OUTPUT.findall(page.read_text(encoding="utf-8"))):
        path = ROOT / "runs" / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


#: The widest shell line a page shows whole (the site's code column, about 90 characters at its font).
SHELL_WIDTH = 90


def test_shell_commands_fit_the_page() -> None:
    # A longer command hides behind a scroll bar: break it with "\\" continuations (one option a line).
    long = [f"{block.name}: {line[:60]}..." for block in ALL if block.language in ("bash", "sh", "shell", "console")
            for line in block.code.splitlines() if len(line) > SHELL_WIDTH]
    assert not long, "\n".join(long)


def _param(block: Block):
    marks = [pytest.mark.xdist_group(f"docs:{block.page.relative_to(ROOT)}")]
    if block.directive == "slow":
        marks.append(pytest.mark.slow)
    return pytest.param(block, id=block.name, marks=marks)


def _skip_without_extras(code: str, command_words: list[str]) -> None:
    for word, probe in WORD_NEEDS.items():
        if word in code and importlib.util.find_spec(probe) is None:
            pytest.skip(f"{word}: {skip_reason(probe)}")
    for module, probe in NEEDS.items():
        if re.search(rf"^\s*(from|import) {re.escape(module)}\b", code, re.M) and importlib.util.find_spec(probe.split(".")[0]) is None:
            pytest.skip(skip_reason(probe))
    for word in command_words:
        probe = COMMAND_NEEDS.get(word)
        if probe and importlib.util.find_spec(probe) is None:
            pytest.skip(f"csr-marl {word}: {skip_reason(probe)}")


def _environment() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg"}


@pytest.mark.parametrize("block", [_param(b) for b in RUNNABLE])
def test_code_block_runs(block: Block) -> None:
    fresh_outputs(block.page)
    if block.language in ("python", "py"):
        _skip_without_extras(block.code, [])
        done = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True, timeout=TIMEOUT, env=_environment(), cwd=ROOT)
        assert done.returncode == 0, f"{block.name}\n{done.stderr[-3000:]}"
        return
    lines = commands(block.code)
    if not lines:
        pytest.skip("no csr-marl or python line to run")
    _skip_without_extras(block.code, [line.split()[1] for line in lines if line.startswith("csr-marl ") and len(line.split()) > 1])
    for line in lines:
        argv = shlex.split(line, comments=True)
        argv = [sys.executable, "-m", "csr_marl", *argv[1:]] if argv[0] == "csr-marl" else [sys.executable, *argv[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=_environment(), cwd=ROOT)
        assert done.returncode == 0, f"{block.name}: {line}\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"


def test_every_skipped_block_says_why() -> None:
    for block in ALL:
        if block.directive:
            assert block.reason.strip(), f"{block.name}: a {block.directive} comment needs a reason"


def test_blocks_that_run_are_found() -> None:
    assert any(b.page.name == "README.md" for b in RUNNABLE)
    assert len(RUNNABLE) >= 30, [b.name for b in RUNNABLE]


def test_the_readme_is_a_landing_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "DESIGN" not in text


def test_the_repository_cites_only_the_repository() -> None:
    """Docs, code and data speak to people who have only the repository: no outside design notes."""
    outside = re.compile("DESIGN" + r"(\.md| §| section)|" + "QUEUEING" + r"\.md")
    files = [*PAGES, ROOT / "CHANGELOG.md", *ROOT.glob("csr_marl/**/*.py"), *ROOT.glob("tests/*.py"),
             *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("scenarios/**/*.yaml"), *ROOT.glob("configs/**/*.yaml")]
    cited = [str(f.relative_to(ROOT)) for f in files if outside.search(f.read_text(encoding="utf-8"))]
    assert not cited


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    need("mkdocs")
    need("material")
    need("mkdocstrings")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=TIMEOUT, env=_environment(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]
