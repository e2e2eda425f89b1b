"""Inputs that once crashed or ran away are refused with one line: exit 2, no traceback, no segfault.

Each reproduction of the review is a test: a scenario YAML nested 50,000 deep (it segfaulted the
parser), deep ``--set`` values (RecursionError), a billion resolvers, an oversized ticket bank,
``simulate --log`` onto an existing file, invalid UTF-8 and a full disk that named no file, and a
chat endpoint that trickles its reply past ``agent --timeout``.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from extras import need

from chat_server import ChatServer, tool_call
from csr_marl.config.loading import MAX_YAML_DEPTH, ScenarioError, load_scenario, load_ticket_bank, scenarios_dir
from csr_marl.config.scenario import MAX_HEADCOUNT
from csr_marl.config.tickets import MAX_TEMPLATES, TicketBank
from csr_marl.whatif.errors import StudyError
from csr_marl.whatif.store import ReplicationLog

ROOT = Path(__file__).resolve().parents[1]
CLI = "from csr_marl.cli import app; app()"


def cli(*args: str, cwd: Path, timeout: float = 120, limit_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limits() -> None:
        if limit_file_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          preexec_fn=limits if limit_file_bytes is not None else None)


def one_line_exit_2(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 2, f"exit {done.returncode}: {output[-2000:]}"
    assert "Traceback" not in output and len(output.splitlines()) == 1, output[-2000:]
    for text in expected:
        assert text in output, output
    return output


# --- YAML nesting --------------------------------------------------------------------------------
def deep_scenario(depth: int, block: bool) -> str:
    head = "name: deep\narrivals: {rate_per_hour: 10}\ndescription: "
    if block:
        return "name: deep\narrivals: {rate_per_hour: 10}\nextra:\n" + "".join(" " * i + "a:\n" for i in range(1, depth)) + " " * depth + "1\n"
    return head + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize(("depth", "block"), [(50_000, False), (20_000, False), (5_000, False), (3_000, True)],
                         ids=["flow-50k", "flow-20k", "flow-5k", "block-3k"])
def test_a_deeply_nested_scenario_is_one_line_exit_2(tmp_path: Path, depth: int, block: bool) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(deep_scenario(depth, block))
    one_line_exit_2(cli("simulate", str(path), cwd=tmp_path), "deep.yaml", f"nested deeper than {MAX_YAML_DEPTH} levels")


def test_a_deeply_nested_set_value_is_one_line_exit_2(tmp_path: Path) -> None:
    done = cli("simulate", "mmc", "--set", "arrivals.profile=" + "[" * 20_000 + "]" * 20_000, cwd=tmp_path)
    one_line_exit_2(done, "--set arrivals.profile", "nested deeper")


def test_a_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 120)]
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\narrivals: {rate_per_hour: 10}\n" + "\n".join(lines) + "\n")
    with pytest.raises(ScenarioError, match="aliases"):
        load_scenario(path)


# --- headcounts and bank sizes ---------------------------------------------------------------------
def test_a_billion_resolvers_are_refused_at_validation(tmp_path: Path) -> None:
    done = cli("simulate", "standard_day", "--set", "staffing.resolver=1000000000", cwd=tmp_path, timeout=60)
    one_line_exit_2(done, "staffing.resolver", str(MAX_HEADCOUNT))
    with pytest.raises(ScenarioError, match="staffing.shifts"):
        load_scenario("standard_day", {"staffing.shifts": [{"at_minute": 10, "triage": 10**6}]})


def test_a_bank_with_too_many_templates_is_refused() -> None:
    raw = yaml.safe_load((scenarios_dir() / "tickets" / "default.yaml").read_text())
    count = len(raw["templates"])
    raw["templates"] = [dict(t, id=f"{t['id']}_{i}") for i in range(MAX_TEMPLATES // count + 1) for t in raw["templates"]]
    with pytest.raises(ValueError, match=f"at most {MAX_TEMPLATES}"):
        TicketBank.model_validate(raw)


def test_an_oversized_bank_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("w") as out:
        out.write("templates:\n")
        line = "  - {id: t, text: '" + "x" * 1000 + "'}\n"
        for _ in range(11 * 1024):
            out.write(line)
    with pytest.raises(ScenarioError, match=r"huge.yaml: 1\d\.\d MB, over the 10 MB"):
        load_ticket_bank(str(path))


# --- simulate --log --------------------------------------------------------------------------------
def test_simulate_log_refuses_an_existing_file_unless_forced(tmp_path: Path) -> None:
    log = tmp_path / "existing.csv"
    log.write_text("precious\n")
    one_line_exit_2(cli("simulate", "mmc", "--set", "horizon_minutes=120", "--log", str(log), cwd=tmp_path),
                    "existing.csv", "exists already", "--force")
    assert log.read_text() == "precious\n"
    done = cli("simulate", "mmc", "--set", "horizon_minutes=120", "--log", str(log), "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert log.read_text().startswith("ticket_id,")


# --- I/O errors name their file --------------------------------------------------------------------
def test_invalid_utf8_in_replications_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "replications.csv"
    path.write_bytes(b"seed,value,check\n\xff\xfe1,2,3\n")
    with pytest.raises(StudyError, match="replications.csv: not UTF-8"):
        ReplicationLog(path, ["seed", "value"], key=lambda row: int(row["seed"])).load()


def test_invalid_utf8_in_a_scenario_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes("name: caf\xe9\narrivals: {rate_per_hour: 10}\n".encode("latin-1"))
    one_line_exit_2(cli("simulate", str(path), cwd=tmp_path), "latin.yaml", "not UTF-8")


def test_a_full_disk_names_the_file(tmp_path: Path) -> None:
    full = ReplicationLog(Path("/dev/full"), ["seed", "value"], key=lambda row: int(row["seed"]))
    with pytest.raises(OSError) as caught:  # ENOSPC, as on a full disk
        full.append({"seed": 1, "value": 2})
    assert "/dev/full" in str(caught.value)
    # A file size limit fails the per-contact log mid-run the same way: the error names the log.
    log = tmp_path / "contacts.csv"
    done = cli("simulate", "standard_day", "--log", str(log), cwd=tmp_path, limit_file_bytes=20_000)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode != 0 and "Traceback" not in output and "contacts.csv" in output, output[-2000:]
    assert not log.exists() and [p.name for p in tmp_path.iterdir()] == []


# --- agent --timeout bounds a request as a whole ---------------------------------------------------
@pytest.mark.slow
def test_agent_timeout_bounds_a_reply_that_trickles(tmp_path: Path) -> None:
    need("openai")
    with ChatServer(lambda body: tool_call("check_payment", {}), trickle=0.5) as server:
        started = time.monotonic()
        done = cli("agent", "tasks/resolve", "--roles", "resolver", "--base-url", server.url, "--model", "m",
                   "--timeout", "3", "--retries", "0", "--episodes", "1", "--out", str(tmp_path / "out"),
                   cwd=tmp_path, timeout=100)
        took = time.monotonic() - started
    output = (done.stdout + done.stderr).strip()
    # The whole reply would take over 150 s at one byte per 0.5 s; the request ends at its timeout.
    assert done.returncode != 0 and "did not answer within 3 s" in output and "Traceback" not in output, output[-2000:]
    assert took < 60, took


def test_invalid_utf8_in_an_arrival_trace_names_the_file(tmp_path: Path) -> None:
    from csr_marl.config.loading import read_trace

    path = tmp_path / "arrivals.csv"
    path.write_bytes(b"arrival_minute\n1.0\n\xff2.0\n")
    with pytest.raises(ScenarioError, match="arrivals.csv: not UTF-8"):
        read_trace(str(path))
