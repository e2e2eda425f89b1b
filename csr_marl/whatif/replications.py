"""Independent replications with reproducible seeds, run on any executor as they complete.

Replication ``r`` of a study with base seed ``s`` always runs with
``numpy.random.SeedSequence(entropy=s, spawn_key=(r,))`` — the ``r``-th child of
``SeedSequence(s).spawn(...)`` — whatever the grid point, worker count or completion order. So every
grid point sees the same customers in replication ``r`` (common random numbers), replications are
independent of each other, and adding replications later keeps the ones already run.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Hashable, Iterable, Iterator

import numpy as np

from ..config.scenario import Scenario
from ..simulation import simulate
from .executors import local_cpus
from .records import replication_record


SEED_SCHEME = (
    "replication r runs with numpy SeedSequence(entropy=base_seed, spawn_key=(r,)) at every grid "
    "point: the same customers across grid points (common random numbers), independent replications"
)


def replication_seed(base_seed: int, replication: int) -> np.random.SeedSequence:
    """The root seed of replication ``replication`` (see the module docstring)."""
    return np.random.SeedSequence(entropy=base_seed, spawn_key=(replication,))


@dataclass(frozen=True)
class Replication:
    """One simulated episode to run: a scenario, a built-in policy and a replication index.

    ``key`` identifies it within its study (for example ``(grid_point, replication)``).
    """

    key: Hashable
    scenario: Scenario
    policy: str
    base_seed: int
    replication: int


def run_replication(task: Replication) -> dict[str, float]:
    """Run one replication and return its metrics record (runs in a worker)."""
    seed = replication_seed(task.base_seed, task.replication)
    return replication_record(simulate(task.scenario, task.policy, seed), task.scenario.manager)


def run_replication_with_intervals(task: Replication) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Run one replication and return its metrics record and its KPIs per interval (runs in a worker)."""
    result = simulate(task.scenario, task.policy, replication_seed(task.base_seed, task.replication))
    return replication_record(result, task.scenario.manager), result.intervals


def run_replications(
    tasks: Iterable[Replication], executor: Executor, *, max_in_flight: int | None = None,
    worker: Callable[[Replication], Any] = run_replication,
) -> Iterator[tuple[Replication, Any]]:
    """Yield ``(task, record)`` as each replication finishes, in completion order (``worker(task)``
    makes the record: by default :func:`run_replication`).

    At most ``max_in_flight`` tasks are submitted at once (default four per CPU), so a long study
    starts reporting at once and an interrupted one loses only the replications in flight. If a
    replication fails, or the consumer stops early, the tasks not yet started are cancelled.
    """
    limit = max_in_flight or 4 * local_cpus()
    queue = iter(tasks)
    pending: dict[Future, Replication] = {}

    def top_up() -> None:
        for task in islice(queue, max(limit - len(pending), 0)):
            pending[executor.submit(worker, task)] = task

    try:
        top_up()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                yield task, future.result()
            top_up()
    finally:
        for future in pending:
            future.cancel()
