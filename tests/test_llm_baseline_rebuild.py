"""Rebuilding the LLM baseline page from a run's saved JSON plays nothing and keeps that run's settings."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "benchmarks" / "results" / "llm_baseline.json"


def test_a_rebuild_from_the_json_keeps_the_runs_settings_not_its_own_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import llm_baseline

    saved = json.loads(SAVED.read_text())
    saved["settings"].update(jobs=7, from_log=None)  # as a run that played its episodes with 7 processes wrote it
    source = tmp_path / "run.json"
    source.write_text(json.dumps(saved))
    out = tmp_path / "results"
    out.mkdir()
    for page in ("llm_baseline.md", "adversarial_suite.json"):  # the page's ladder rows come from the suite's record
        shutil.copy(ROOT / "benchmarks" / "results" / page, out / page)
    monkeypatch.setattr(llm_baseline, "RESULTS", out)
    monkeypatch.setattr(sys, "argv", ["llm_baseline.py", "--from-log", str(source), "--write", "--jobs", "1"])
    llm_baseline.main()
    rebuilt = json.loads((out / "llm_baseline.json").read_text())
    assert rebuilt["settings"]["jobs"] == 7 and rebuilt["settings"]["from_log"] is None
    assert rebuilt["table"] == saved["table"] and rebuilt["runs"] == saved["runs"]
    assert (out / "llm_baseline.md").read_text() == (ROOT / "benchmarks" / "results" / "llm_baseline.md").read_text()
