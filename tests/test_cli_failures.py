"""Whatever goes wrong under ``csr-marl``, the user reads one line and gets a non-zero exit code.

Run as a user runs the command, in a real process with the typer and Click installed here; the
catch-all (csr_marl.cli.LazyGroup.main) names only exceptions that every typer of the declared range
has, so a name missing from one release cannot turn an error into a traceback. Ctrl-C in ``sweep``
says what was kept and how to resume.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkout import ROOT

# A command whose function raises ``error``: the command is looked up when it runs (csr_marl.cli), so
# replacing the function in its module before the call stands for a failure anywhere in a command.
RAISING = (
    "import sys, typer\n"
    "import csr_marl.cli.simulate as commands\n"
    "from csr_marl.cli import app\n"
    "def failing() -> None:\n"
    "    '''List the scenarios.'''\n"
    "    raise {error}\n"
    "commands.scenarios_command = failing\n"
    "app(['scenarios'], prog_name='csr-marl')\n"
)


def run_failing(error: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", RAISING.format(error=error)], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_an_unexpected_error_is_one_line_naming_it() -> None:
    done = run_failing("RuntimeError('the disk\\nis on fire')")
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: RuntimeError: the disk is on fire (unexpected: CSR_MARL_TRACEBACK=1")


def test_the_traceback_is_one_variable_away() -> None:
    done = run_failing("RuntimeError('the disk is on fire')", CSR_MARL_TRACEBACK="1")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and done.stderr.rstrip().endswith("RuntimeError: the disk is on fire")


@pytest.mark.parametrize(("error", "line", "code"), [
    ("typer.Abort()", "aborted", 1),
    ("KeyboardInterrupt()", "interrupted", 130),
    ("EOFError()", "aborted", 1),
    ("typer.BadParameter('--seed: must be at least 0')", "error: Invalid value: --seed: must be at least 0 (see csr-marl scenarios --help)", 2),
    ("SystemExit(3)", None, 3),
])
def test_every_way_out_is_at_most_one_line(error: str, line: str | None, code: int) -> None:
    done = run_failing(error)
    assert done.returncode == code, done.stderr
    # (end of input first moves to a new line, as the shell would not: no line but a blank one)
    assert [text for text in done.stderr.splitlines() if text] == ([line] if line else [])


def test_a_usage_error_is_one_line_with_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "csr_marl", "simulate", "standard_day", "--no-such-option"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    # Click words it "No such option: --x" or (8.2 on) "No such option '--x'."
    assert line.startswith("error: No such option") and "--no-such-option" in line and "(see csr-marl simulate --help)" in line


def test_ctrl_c_in_a_sweep_says_what_was_kept_and_how_to_resume(tmp_path: Path) -> None:
    """A real process, interrupted by SIGINT as a terminal's Ctrl-C sends it (to its whole process
    group, the workers too), once some replications are on disk. The sweep is far longer than the test
    waits (4,000 runs, about a minute): on a busy machine, 400 finished before the test looked again."""
    out = tmp_path / "sweep"
    command = [sys.executable, "-m", "csr_marl", "sweep", "mmc", "--vary", "staffing.resolver=3..4",
               "--replications", "2000", "--set", "horizon_minutes=120", "--workers", "1", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    log = out / "replications.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if log.is_file() and len(log.read_text().splitlines()) >= 3:  # the header and two replications
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    lines = [line for line in stderr.splitlines() if not line.startswith("sweep: ")]  # progress lines
    assert len(lines) == 1, stderr
    (line,) = lines
    on_disk = len(log.read_text().splitlines()) - 1
    assert 2 <= on_disk < 4000
    # the count is the progress reported; a replication written in the instant before Ctrl-C may not be in it
    assert any(line.startswith(f"interrupted: {kept} of 4000 replications kept in {out}") for kept in (on_disk, on_disk - 1)), line
    assert "rerun the same command to resume" in line and "--out" in line
    assert "Traceback" not in stdout + stderr
