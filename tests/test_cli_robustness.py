"""The CLI never destroys a file, never prints a traceback for a user error, and says what it measured."""

from __future__ import annotations

import csv
import errno
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from csr_marl.cli import app
from csr_marl.cli.common import console, estimates_table
from csr_marl.whatif import store
from csr_marl.whatif.baselines import run_baselines

runner = CliRunner()


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_a_rejected_log_path_keeps_the_file(tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("precious\n")
    line = one_error_line(runner.invoke(app, ["simulate", "mmc", "--log", str(keep)]))
    assert "--log" in line and keep.read_text() == "precious\n"


def test_a_rejected_policy_keeps_an_existing_log(tmp_path: Path) -> None:
    keep = tmp_path / "keep.csv"
    keep.write_text("".join(f"{i}\n" for i in range(642)))
    line = one_error_line(runner.invoke(app, ["simulate", "mmc", "--log", str(keep), "--force", "--policy", "nosuch"]))
    assert "nosuch" in line
    assert len(keep.read_text().splitlines()) == 642
    assert [p.name for p in tmp_path.iterdir()] == ["keep.csv"]  # no temporary file left behind


def test_the_log_appears_whole_when_the_run_finishes(tmp_path: Path) -> None:
    log = tmp_path / "tickets.csv"
    result = runner.invoke(app, ["simulate", "mmc", "--set", "horizon_minutes=120", "--log", str(log)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(log.open()))
    assert rows and {"ticket_id", "outcome"} <= rows[0].keys()
    assert [p.name for p in tmp_path.iterdir()] == ["tickets.csv"]


def test_an_output_file_in_a_missing_folder_creates_the_folder(tmp_path: Path) -> None:
    log = tmp_path / "runs" / "today" / "tickets.csv"
    result = runner.invoke(app, ["simulate", "mmc", "--set", "horizon_minutes=240", "--log", str(log)])
    assert result.exit_code == 0, result.output
    assert list(csv.DictReader(log.open()))
    out = tmp_path / "plans" / "day.yaml"
    result = runner.invoke(app, ["calibrate", str(Path(__file__).parents[1] / "scenarios/examples/contacts.csv"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().strip()


@pytest.mark.parametrize("command", [
    ["simulate", "mmc", "--log", "{file}/sub/x.csv"],
    ["sweep", "mmc", "--vary", "staffing.resolver=4..5", "--replications", "2", "--out", "{file}/sub"],
    ["baseline", "--scenario", "mmc", "--episodes", "2", "--out", "{file}/sub"],
    ["evaluate", "{file}.pt", "--out", "{file}/sub"],
    ["train", "tasks/classify", "--steps", "10", "--eval-points", "1", "--out", "{file}/sub"],
])
def test_unwritable_outputs_are_one_line_before_any_work(tmp_path: Path, command: list[str]) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    args = [part.replace("{file}", str(a_file)) for part in command]
    one_error_line(runner.invoke(app, args))


def test_a_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "b" / "random_baseline.md"))

    monkeypatch.setattr("csr_marl.whatif.store.atomic_write", full)
    monkeypatch.setattr("csr_marl.whatif.baselines.atomic_write", full, raising=False)
    result = runner.invoke(app, ["baseline", "--scenario", "mmc", "--episodes", "2", "--set", "horizon_minutes=90",
                                 "--out", str(tmp_path / "b")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0]


def test_zero_replications_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sweep", "mmc", "--vary", "staffing.resolver=4..5", "--replications", "0",
                                 "--out", str(tmp_path / "s")])
    assert "--replications must be at least 1" in one_error_line(result)
    assert not (tmp_path / "s").exists()


def test_a_huge_grid_is_refused_at_once(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sweep", "mmc", "--vary", "staffing.resolver=1..1000",
                                 "--vary", "arrivals.rate_per_hour=1..1000", "--out", str(tmp_path / "s")])
    assert "1,000,000 points" in one_error_line(result)


def test_a_huge_erlang_volume_is_refused_at_once() -> None:
    result = runner.invoke(app, ["erlang", "--volume", "1e9", "--interval-minutes", "30", "--aht-seconds", "180",
                                 "--target-sl", "0.8", "--within-seconds", "20"])
    assert "Erlangs is too large" in one_error_line(result)


def test_a_negative_seed_names_the_seed() -> None:
    assert "seed" in one_error_line(runner.invoke(app, ["simulate", "mmc", "--seed", "-5"]))


def test_install_hints_keep_their_extras_on_screen() -> None:
    """rich read [plot] as markup: users saw pip install 'csr-marl'."""
    code = (
        "import sys, typer\n"
        "from csr_marl.cli.common import fail\n"
        "try:\n"
        "    fail(\"no plot written: it needs matplotlib, pip install 'csr-marl[plot]'\")\n"
        "except typer.Exit:\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'csr-marl[plot]'" in done.stderr


def _sweep(out: Path) -> list[str]:
    return ["sweep", "mmc", "--vary", "staffing.resolver=4..5", "--replications", "2", "--set",
            "horizon_minutes=90", "--out", str(out)]


@pytest.mark.parametrize("damage", ["number", "duplicate", "beyond", "text"])
def test_resume_refuses_a_damaged_replication_log_naming_file_and_line(tmp_path: Path, damage: str) -> None:
    out = tmp_path / "study"
    assert runner.invoke(app, _sweep(out)).exit_code == 0
    log = out / "replications.csv"
    lines = log.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[2].split(",")
    column = header.index("service_level")
    if damage == "number":
        cells[column] = "0.999"
        lines[2] = ",".join(cells)
    elif damage == "duplicate":
        cells[column] = "0.5"
        lines.append(",".join(cells))
    elif damage == "beyond":
        cells[header.index("replication")] = "7"
        lines.append(",".join(cells))
    else:
        cells[column] = "abc"
        lines[2] = ",".join(cells)
    log.write_text("\n".join(lines) + "\n")
    summary_before = (out / "summary.csv").read_text()
    line = one_error_line(runner.invoke(app, _sweep(out)))
    assert "replications.csv, line" in line
    assert (out / "summary.csv").read_text() == summary_before


def test_a_log_line_cut_by_a_kill_is_dropped_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "study"
    assert runner.invoke(app, _sweep(out)).exit_code == 0
    log = out / "replications.csv"
    text = log.read_text()
    log.write_text(text + text.splitlines()[-1][:40])  # a half-written line
    result = runner.invoke(app, _sweep(out))
    assert result.exit_code == 0, result.output
    assert log.read_text() == text


def test_wide_tables_fit_80_columns() -> None:
    rows = run_baselines(["mmc", "tasks/classify", "tasks/resolve"], "random", episodes=2,
                         overrides={"horizon_minutes": 90})
    for entries in (rows[:2], rows):
        with console.capture() as capture:
            console.print(estimates_table("t", "scenario", entries, lambda row: row.scenario, width=80), width=80)
        text = capture.get()
        assert max(len(line) for line in text.splitlines()) <= 80
        assert "…" not in text  # no cell cut short


def test_store_writes_never_leave_a_half_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("old")

    def explode(handle):
        handle.write("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        store.atomic_write(target, explode)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]
