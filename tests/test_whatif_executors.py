"""Executors: a process pool, inline, and (when installed) Ray give identical results."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor

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
