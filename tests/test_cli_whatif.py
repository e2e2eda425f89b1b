"""``csr-marl sweep | staff | erlang | baseline``: output, files, resume, one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from csr_marl.cli import app

runner = CliRunner()
SHORT = ["--set", "horizon_minutes=120", "--set", "warmup_minutes=0"]


def flat(text: str) -> str:
    return " ".join(text.split())


def sweep_args(out: Path, *extra: str) -> list[str]:
    return ["sweep", "mmc", "--vary", "staffing.resolver=4..5", "--replications", "2", "--workers", "2", "--out", str(out), *SHORT, *extra]


def test_erlang_table() -> None:
    result = runner.invoke(app, ["erlang", "--volume", "100", "--interval-minutes", "30", "--aht-seconds", "180",
                                 "--target-sl", "0.8", "--within-seconds", "20", "--shrinkage", "0.3"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "required" in line)
    assert line.split()[1] == "14" and "88.8%" in line
    assert "scheduled with 30% shrinkage: 20" in flat(result.output)


def test_erlang_json_with_patience() -> None:
    result = runner.invoke(app, ["erlang", "--volume", "100", "--aht-seconds", "180", "--patience-seconds", "120", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["model"] == "Erlang A" and payload["required_agents"] == 12
    assert all(row["p_abandon"] > 0 for row in payload["rows"])


def test_sweep_runs_resumes_and_refuses_another_study(tmp_path: Path) -> None:
    out = tmp_path / "study"
    first = runner.invoke(app, sweep_args(out, "--kpi", "p_wait", "--target", "p_wait<=0.5"))
    assert first.exit_code == 0, first.output
    assert "staffing.resolver" in first.output and "p_wait" in first.output
    assert {p.name for p in out.iterdir()} == {"config.yaml", "manifest.json", "replications.csv", "summary.csv", "p_wait.png",
                                              "interval_replications.csv", "intervals.csv"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert "--vary staffing.resolver=4..5" in manifest["command"]

    again = runner.invoke(app, sweep_args(out, "--kpi", "p_wait"))
    assert again.exit_code == 0, again.output
    assert "resumed: 4 replications were already in" in flat(again.output)

    before = {p.name: p.read_bytes() for p in out.iterdir()}
    other = runner.invoke(app, sweep_args(out, "--policy", "random"))
    assert other.exit_code == 2
    assert f"error: {out} holds another study (policy: expert there, random here;" in flat(other.output)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "staffing.resolver"], "--vary 'staffing.resolver': expected FIELD=VALUES"),
        (["--vary", "staffing.resolver=9..3"], "the range is empty (9 > 3)"),
        (["--vary", "staffing.resolvr=3..4"], "--vary staffing.resolvr=3..4: scenario 'mmc': staffing.resolvr: unknown key"),
        (["--vary", "staffing.resolver=3..4", "--target", "p_wait=0.5"], "expected KPI>=VALUE or KPI<=VALUE"),
        (["--vary", "staffing.resolver=3..4", "--target", "p_wiat<=0.5"], "unknown KPI 'p_wiat' (did you mean p_wait?)"),
        (["--vary", "staffing.resolver=3..4", "--kpi", "speed"], "--kpi: unknown KPI 'speed'"),
        (["--vary", "staffing.resolver=3..4", "--backend", "dask"], "--backend 'dask': use process or ray"),
        (["--vary", "staffing.resolver=3..4", "--policy", "psychic"], "unknown policy 'psychic'"),
        ([], "give at least one --vary"),
    ],
)
def test_sweep_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "never"
    result = runner.invoke(app, ["sweep", "mmc", "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)
    assert result.output.strip().count("\n") == 0
    assert not out.exists()


def test_sweep_from_a_preset(tmp_path: Path) -> None:
    preset = tmp_path / "preset.yaml"
    preset.write_text(
        "scenario: mmc\nset: {horizon_minutes: 60, warmup_minutes: 0}\nvary: {staffing.resolver: [4, 6]}\n"
        "replications: 2\nkpi: p_wait\ntargets: ['p_wait<=0.5']\n"
    )
    result = runner.invoke(app, ["sweep", "--config", str(preset), "--out", str(tmp_path / "out"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["vary"] == {"staffing.resolver": [4, 6]} and manifest["replications"] == 2
    assert (tmp_path / "out" / "p_wait.png").is_file()
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: mmc\nvarry: {}\n")
    result = runner.invoke(app, ["sweep", "--config", str(bad), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "sweep definition bad.yaml: varry: unknown key" in flat(result.output)


def test_staff_answers_with_cis_at_and_below() -> None:
    result = runner.invoke(app, ["staff", "mmc", "--target", "p_wait<=0.5", "--min-replications", "4",
                                 "--max-replications", "12", "--workers", "2", "--set", "horizon_minutes=180", "--set", "warmup_minutes=0"])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "least headcount meeting p_wait<=0.5: triage=0, resolver=5, escalation=0" in text
    assert "resolver=5 (n=" in text and "resolver=4 (n=" in text and "Erlang estimate 5" in text


def test_staff_json() -> None:
    result = runner.invoke(app, ["staff", "mmc", "--target", "p_wait<=0.5", "--min-replications", "4", "--max-replications", "12",
                                 "--workers", "1", "--json", "--set", "horizon_minutes=180", "--set", "warmup_minutes=0"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)  # progress lines go to stderr
    resolver = payload["roles"]["resolver"]
    assert payload["staffing"]["resolver"] == resolver["headcount"] == 5
    assert resolver["one_below"]["staffing"]["resolver"] == 4 and resolver["one_below"]["meets_targets"] is False
    assert set(resolver["at"]["kpis"]["p_wait"]) == {"mean", "low", "high", "n"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "p_wait<=0.01", "--max-headcount", "4", "--min-replications", "2", "--max-replications", "2"],
         "no resolver headcount up to 4 meets p_wait<=0.01"),
        (["--target", "p_wait"], "--target 'p_wait': expected KPI>=VALUE or KPI<=VALUE"),
        (["--target", "service_level>=2"], "impossible, service_level is a share between 0 and 1"),
        ([], "give at least one --target"),
        (["--target", "p_wait<=0.5", "--role", "chef"], "--role 'chef': unknown role"),
    ],
)
def test_staff_bad_input(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["staff", "mmc", "--workers", "1", *SHORT, *args])
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)


def test_baseline_prints_and_writes(tmp_path: Path) -> None:
    result = runner.invoke(app, ["baseline", "--policy", "random", "--scenario", "mmc,standard_day", "--episodes", "2",
                                 "--out", str(tmp_path), "--workers", "2", *SHORT])
    assert result.exit_code == 0, result.output
    assert "standard_day" in result.output and " ± " in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["random_baseline.csv", "random_baseline.json", "random_baseline.md"]
    payload = json.loads((tmp_path / "random_baseline.json").read_text())
    assert payload["command"].startswith("csr-marl baseline --policy random")


def test_baseline_split_both_writes_train_and_held_out_rows(tmp_path: Path) -> None:
    result = runner.invoke(app, ["baseline", "--policy", "heuristic", "--scenario", "tasks/classify,mmc", "--episodes",
                                 "2", "--split", "both", "--out", str(tmp_path), "--workers", "1", *SHORT])
    assert result.exit_code == 0, result.output
    assert "tasks/classify (held-out)" in result.output and "|" not in result.stdout  # a table, not Markdown
    # The table fits 80 columns; the line naming the files keeps each path whole (the terminal wraps it).
    wrote = [line for line in result.stdout.splitlines() if line.startswith("wrote ")]
    assert len(wrote) == 1 and str(tmp_path / "heuristic_baseline.json") in wrote[0]
    assert max(len(line) for line in result.stdout.splitlines() if not line.startswith("wrote ")) <= 80
    payload = json.loads((tmp_path / "heuristic_baseline.json").read_text())
    assert list(payload["scenarios"]) == ["tasks/classify (train)", "tasks/classify (held-out)", "mmc"]


def test_baseline_bad_input(tmp_path: Path) -> None:
    for args, message in [
        (["--policy", "psychic"], "unknown policy 'psychic'"),
        (["--scenario", "atlantis"], "unknown scenario 'atlantis'"),
        (["--episodes", "0"], "--episodes must be at least 1"),
        (["--split", "held_out"], "--split must be one of all, train, test, both"),
    ]:
        result = runner.invoke(app, ["baseline", "--out", str(tmp_path / "b"), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in flat(result.output)
    assert not (tmp_path / "b").exists()
