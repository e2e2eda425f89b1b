"""Pages, benchmark scripts and results, the README, the CHANGELOG, the package and its tests speak about
the product.

They describe what the code does and how to reproduce it; none of them names how it was developed (a
numbered or relative work session, "this round" of work, an issue number no link can resolve). The
product's own sessions (a ``TextSession``, a server or WebSocket session, a training session) are
not process words, so the patterns below name process phrases only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_ORDINAL = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
            r"fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\d+(?:st|nd|rd|th))")

#: Each pattern with what it catches; matching is case-insensitive.
PROCESS_WORDS = {
    "a numbered work session": re.compile(_ORDINAL + r"[\s_-]+sessions?\b|(?<![-\w])session\s+\d+\b", re.I),
    "a work session named relative to another": re.compile(
        r"\b(?:this|last|previous|earlier|prior|later|next)[\s_-]+sessions?\b|\bshared with \w+ other sessions\b", re.I),
    "an issue or pull-request number": re.compile(
        r"\bissues?\s*#\d+|(?<!/ )\bissues?\s+\d+(?!\s*/)|\b(?:(?-i:PR)|pull request)\s*#?\d+", re.I),
    "a round of work": re.compile(r"\b(?:this|the previous)\s+round\b(?!'s seeds| of (?:each|every|a|the) run)"
                                  r"|\bround \(issue|\bfound this round\b", re.I),
}

#: Where the rule holds: every text file a reader or a user of the package meets, and the tests.
SCANNED = ("docs", "benchmarks", "csr_marl", "tests", "README.md", "CHANGELOG.md")
#: This file names the phrases it catches.
EXEMPT = {Path(__file__).resolve()}
SUFFIXES = {".md", ".py", ".json", ".csv", ".yaml", ".yml", ".txt", ".toml", ".cfg"}


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The text files under the scanned folders (build outputs and caches left out)."""
    found = []
    for name in SCANNED:
        path = root / name
        if path.is_file():
            found.append(path)
            continue
        for file in path.rglob("*"):
            parts = set(file.relative_to(root).parts)
            if file.is_file() and file.suffix in SUFFIXES and not parts & {"__pycache__", ".asv", "build", "site"}:
                found.append(file)
    return sorted(f for f in found if f.resolve() not in EXEMPT)


def process_words(text: str) -> list[tuple[int, str, str]]:
    """``(line, what, phrase)`` for every process phrase in ``text``."""
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        lowered = line.lower()
        if not any(word in lowered for word in ("session", "issue", "round", "pr", "pull request")):
            continue  # every pattern names one of these words
        for what, pattern in PROCESS_WORDS.items():
            hits.extend((number, what, match.group(0)) for match in pattern.finditer(line))
    return hits


@pytest.mark.parametrize("phrase", [
    "Fifteenth session: every target met", "the fourteenth session's figures", "results/x.md#twelfth-session-text",
    "in this session's runs", "measured last session", "as in the previous session", "shared with three other sessions",
    "This round (issue 31): the core", "issue #11", "issues 2 and 12", "before issue 12's speed work",
    "the previous round's main", "Found this round: TRL", "measured in session 12", "merged in PR #41",
])
def test_process_phrases_are_caught(phrase: str) -> None:
    assert process_words(phrase), phrase


@pytest.mark.parametrize("phrase", [
    "a TextSession plays one episode", "one session cap for WebSocket and HTTP", "each WebSocket session holds an env",
    "a training session of the env", "the server closes the session", "shuts that session down again",
    "C category 30 / priority 30 / issue 30", "the issue category of a ticket", "the first round of each run",
    "the secure stage's last round", "each round's ratios against the references of that round's run",
    "a round's seeds run ahead of the next round's", "plays this round's seeds",
    "csr-marl serve --max-sessions 64", "a PRNG seed", "the express route",
])
def test_product_words_are_not_caught(phrase: str) -> None:
    assert not process_words(phrase), process_words(phrase)


def test_no_page_or_module_names_the_development_process() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {phrase!r} ({what})"
             for path in scanned_files() for line, what, phrase in process_words(path.read_text(encoding="utf-8", errors="replace"))]
    assert not found, "process words (describe the product; history goes to CHANGELOG.md in product terms):\n" + "\n".join(found)
