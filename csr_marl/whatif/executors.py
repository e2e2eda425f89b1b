"""Where replications run: any ``concurrent.futures.Executor``.

The default is a local process pool sized to the machine; its workers end themselves when the process
that started them dies (even by ``kill -9``), instead of waiting, idle, forever. ``ray_executor`` runs replications as Ray
tasks on an existing cluster (``address="auto"`` or ``"ray://host:10001"``) or a local one; Ray is
imported only then, and its absence is reported naming the extra to install. ``InlineExecutor`` runs
each task at submission, in this process (handy for debugging and for tiny studies).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, Callable, Iterator

from .errors import StudyError

BACKENDS: tuple[str, ...] = ("process", "ray", "inline")
#: How often a pool worker checks that the process that started it is still there.
PARENT_CHECK_SECONDS = 0.5


def local_cpus() -> int:
    """CPUs this process may use (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def exit_with_parent() -> None:
    """Pool worker initializer: a daemon thread ends this process as soon as its parent is gone.

    A parent that dies (``kill -9`` included) has its children handed to another process, so the
    parent id changes; the thread then exits the worker at once (its queued work has no one to report to).
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="csr-marl-parent-watch", daemon=True).start()


def process_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """A local process pool of ``workers`` processes (default one per CPU) that die with their parent."""
    return ProcessPoolExecutor(max_workers=workers or local_cpus(), initializer=exit_with_parent)


class InlineExecutor(Executor):
    """Runs every task in the calling thread at ``submit``; the returned future is already done."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


class RayExecutor(Executor):
    """Submits each call as a Ray task; futures are Ray's ``ObjectRef.future()``.

    Uses the running Ray session if there is one (for instance ``ray.init(num_cpus=2)`` in a test),
    otherwise connects with ``ray.init(address=address)`` (``None`` starts a local cluster) and
    shuts that session down again in :meth:`shutdown`.
    """

    def __init__(self, address: str | None = None, **init_options: Any) -> None:
        self._ray = import_ray()
        self._owns_session = not self._ray.is_initialized()
        if self._owns_session:
            local = {"include_dashboard": False} if address is None else {}
            self._ray.init(address=address, **local, **init_options)
        self._call = self._ray.remote(_call)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self._call.remote(fn, args, kwargs).future()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._owns_session:
            self._ray.shutdown()
            self._owns_session = False


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


def import_ray() -> Any:
    """``import ray``, or a :class:`StudyError` naming the extra that provides it."""
    try:
        import ray
    except ImportError:
        raise StudyError(
            "the ray backend needs Ray: pip install 'csr-marl[ray]'"
        ) from None
    return ray


def make_executor(backend: str = "process", workers: int | None = None, address: str | None = None) -> Executor:
    """An executor for ``backend``: ``process`` (``workers`` processes, default one per CPU),
    ``ray`` (tasks on the cluster at ``address``, or a local one) or ``inline``."""
    if workers is not None and workers < 1:
        raise StudyError(f"--workers must be at least 1, got {workers}")
    if backend == "process":
        return process_pool(workers)
    if backend == "ray":
        return RayExecutor(address, **({"num_cpus": workers} if workers and address is None else {}))
    if backend == "inline":
        return InlineExecutor()
    raise StudyError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")


@contextlib.contextmanager
def executor_scope(
    executor: Executor | None = None, workers: int | None = None, backend: str = "process", address: str | None = None
) -> Iterator[Executor]:
    """Use ``executor`` as given (the caller shuts it down), or make one with :func:`make_executor`
    and shut it down on leaving."""
    if executor is not None:
        yield executor
        return
    owned = make_executor(backend, workers, address)
    try:
        yield owned
    finally:
        owned.shutdown(wait=True, cancel_futures=True)
