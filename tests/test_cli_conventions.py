"""The command line behaves like the tools people know: --version, light --help, strict JSON, progress
when piped, one-line errors, tables within 80 columns with their abbreviations defined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import csr_marl
from csr_marl.cli import COMMANDS, app, command_callback
from csr_marl.cli.common import fail, one_line, print_json
from csr_marl.sim.kpis import new_file_mode

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _reject_constant(name: str) -> None:
    raise ValueError(f"not strict JSON: {name}")


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    from csr_marl.sim import COMPILED  # what the core that imports is: the line must say the same

    build = "compiled core" if COMPILED else "pure-Python core"
    assert result.stdout.startswith(f"csr-marl {csr_marl.__version__} ({build}")
    assert len(result.stdout.strip().splitlines()) == 1


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from csr_marl.cli import app\n"
        "try:\n    app(['--help'], prog_name='csr-marl')\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('numpy', 'simpy', 'pydantic', 'pettingzoo', 'csr_marl.sim', 'csr_marl.cli.simulate') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
    for command in COMMANDS:
        assert command.name in done.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_listed_summary_is_the_docstring(command) -> None:
    doc = " ".join((command_callback(command.name).__doc__ or "").strip().split("\n\n")[0].split())
    assert doc == command.summary


def test_help_shows_plain_metavars() -> None:
    text = runner.invoke(app, ["staff", "--help"]).stdout
    assert "Usage: csr-marl staff [OPTIONS] [SCENARIO]" in text  # optional: --forecast builds its own
    assert "<bool>" not in text and "<str>" not in text and "{" not in text.splitlines()[1]


def test_simulate_json_is_strict_with_nulls() -> None:
    result = runner.invoke(app, ["simulate", "tasks/classify", "--json", "--set", "horizon_minutes=60"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout, parse_constant=_reject_constant)
    assert payload["kpis"]["occupancy_resolver"] is None  # no resolvers: not measured, written as null


def test_print_json_turns_non_finite_numbers_into_null(capsys) -> None:
    import numpy as np

    print_json({"a": float("nan"), "b": [float("inf"), np.float32(1.5)], "c": np.array([np.nan, 2.0])})
    assert json.loads(capsys.readouterr().out, parse_constant=_reject_constant) == {"a": None, "b": [None, 1.5], "c": [None, 2.0]}


def test_simulate_table_fits_80_columns_and_defines_its_abbreviations() -> None:
    result = runner.invoke(app, ["simulate", "standard_day", "--set", "horizon_minutes=60", "--set", "staffing.resolver=3"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "set horizon_minutes=60, staffing.resolver=3" in " ".join(" ".join(lines[:3]).split())
    assert "service_level (resolver queue)" in result.stdout
    for short in ("SLA =", "SL =", "ASA =", "SLA met ="):
        assert short in result.stdout
    assert "1440" in result.stdout and "15" in result.stdout  # per-priority SLA limits


def test_sweep_reports_progress_when_not_a_terminal(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sweep", "mmc", "--vary", "staffing.resolver=4,5", "--replications", "2", "--workers", "1",
                                 "--set", "horizon_minutes=60", "--set", "warmup_minutes=0", "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "sweep: 4/4 runs (100%)" in result.stderr


def test_errors_are_one_line(capsys) -> None:
    assert one_line("endpoint dead:\n  connection refused") == "endpoint dead: connection refused"
    with pytest.raises(Exception):
        fail("first\nsecond")
    err = capsys.readouterr().err
    assert err.strip() == "error: first second"


def test_log_says_where_it_wrote(tmp_path: Path) -> None:
    folder = tmp_path / ("a-folder-with-a-long-name-" * 3)
    folder.mkdir()
    log = folder / "tickets.csv"
    result = runner.invoke(app, ["simulate", "tasks/classify", "--set", "horizon_minutes=30", "--log", str(log)])
    assert result.exit_code == 0, result.output
    # The whole path on one line, however narrow the terminal: a user copies it from there.
    assert f"wrote the per-contact log {log} " in result.stdout
    assert log.stat().st_mode & 0o777 == new_file_mode()  # as open() makes files, not mkstemp's 0600


def test_cli_reference_covers_every_command_and_option() -> None:
    from csr_marl.cli.reference import markdown_reference

    text = markdown_reference()
    for command in COMMANDS:
        assert f"## `csr-marl {command.name}`" in text and command.summary in text
    assert "| `--vary, -v` | `TEXT` |" in text and "| `--version` |" in text
    assert "\\[" not in text  # rich's escapes are undone
