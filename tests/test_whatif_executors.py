"""Executors: a process pool, inline, and (when installed) Ray give identical results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from extras import need

import csr_marl
from csr_marl.whatif import InlineExecutor, Replication, StudyError, make_executor, run_replications
from csr_marl.whatif.executors import executor_scope, local_cpus

SCENARIO = csr_marl.load_scenario("mmc", {"horizon_minutes": 90, "warmup_minutes": 0})


def replications(n: int = 6) -> list[Replication]:
    return [Replication(r, SCENARIO, "heuristic", 11, r) for r in range(n)]


def run_all(executor) -> dict[int, dict[str, str]]:
    """Records by replication, values as repr so that NaN compares equal to NaN."""
    finished = run_replications(replications(), executor, max_in_flight=3)
    return {task.key: {k: repr(v) for k, v in record.items()} for task, record in finished}


@pytest.fixture(scope="module")
def inline_results() -> dict[int, dict[str, str]]:
    return run_all(InlineExecutor())


def test_process_pool_matches_inline(inline_results) -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert run_all(pool) == inline_results


def test_default_executor_is_a_process_pool_sized_to_the_machine() -> None:
    pool = make_executor()
    try:
        assert isinstance(pool, ProcessPoolExecutor) and pool._max_workers == local_cpus()
    finally:
        pool.shutdown()
    with executor_scope(None, workers=1) as scoped:
        assert isinstance(scoped, ProcessPoolExecutor)


def test_a_failing_replication_is_raised() -> None:
    broken = Replication(0, SCENARIO, "no-such-policy", 0, 0)
    with pytest.raises(ValueError, match="unknown policy"):
        list(run_replications([broken], InlineExecutor()))


def test_bad_backend_and_workers() -> None:
    with pytest.raises(StudyError, match="unknown backend 'dask'"):
        make_executor("dask")
    with pytest.raises(StudyError, match="--workers must be at least 1"):
        make_executor("process", 0)


def test_missing_ray_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(StudyError, match=r"pip install 'csr-marl\[ray\]'"):
        make_executor("ray")


@pytest.mark.slow
def test_ray_tasks_match_the_process_pool(inline_results) -> None:
    ray = need("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        executor = make_executor("ray")  # joins the running session, leaves it running
        assert run_all(executor) == inline_results
        executor.shutdown()
        assert ray.is_initialized()
    finally:
        ray.shutdown()


def _children(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is ``pid``, from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError):
            continue
        if int(parent) == pid and state != "Z":
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_sweep_workers_exit_when_their_parent_is_killed(tmp_path: Path) -> None:
    """kill -9 of a ``csr-marl sweep --workers 2`` leaves no worker behind (each watches its parent)."""
    command = [sys.executable, "-m", "csr_marl", "sweep", "validation/mmc", "--vary", "staffing.resolver=2..9",
               "--replications", "500", "--workers", "2", "--out", str(tmp_path / "study")]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(workers := _children(parent.pid)) < 2 and parent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers) >= 2, "the sweep never started its two workers"
    finally:
        parent.kill()  # SIGKILL: no cleanup runs in the parent
        parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:  # never leave them behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent"
