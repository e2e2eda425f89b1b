"""Worker processes that each step a block of environment copies per message, through shared memory.

The machinery behind :mod:`csr_marl.envs.vector`, independent of what a copy is. The parent owns one
shared buffer (``multiprocessing`` ``RawArray``, no names to leak) holding a fixed set of fields, each
an array with one row per copy (actions in, observations, rewards, masks out). A command is one short
message to every worker (``"step"``); each worker runs it on its block of copies, writing their rows
in place, and answers ``"ok"``. Two messages per worker per vector step, however many copies it holds:
that is what lets a pipe round trip (tens of microseconds) be paid once per block rather than per copy.

Failures surface as one :class:`WorkerError` in the parent, naming the copy, the worker and the
command, with the worker's traceback; a worker that dies (killed, out of memory) is noticed through its
process sentinel rather than waited for. After an error the pool is shut down. :meth:`WorkerPool.close`
asks every worker to stop, joins it and terminates any that do not; it also runs when the pool is
garbage collected and at interpreter exit, and workers exit by themselves when the parent's end of
their pipe closes, so no process outlives its pool.
"""

from __future__ import annotations

import multiprocessing
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

import numpy as np

JOIN_SECONDS = 5.0
ALIGN = 64  # bytes: every field starts on its own cache line


class WorkerError(RuntimeError):
    """A copy failed (or its worker died) while running a command; the pool has been shut down."""


class Copy(Protocol):
    """One environment copy as a worker runs it: it reads and writes its own row ``index`` of ``arrays``."""

    def reset(self, seed: int | None, arrays: Mapping[str, np.ndarray], index: int) -> None: ...

    def step(self, arrays: Mapping[str, np.ndarray], index: int) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Field:
    """A per-copy array in the shared buffer: ``shape`` of one copy's row, and its dtype."""

    shape: tuple[int, ...]
    dtype: Any


class SharedArrays:
    """Named arrays of ``rows`` rows each, laid out in one shared buffer that worker processes inherit."""

    def __init__(self, fields: Mapping[str, Field], rows: int, context: Any) -> None:
        self.fields = dict(fields)
        self.rows = rows
        self.offsets: dict[str, int] = {}
        size = 0
        for name, field in self.fields.items():
            self.offsets[name] = size
            nbytes = rows * int(np.prod(field.shape, dtype=np.int64)) * np.dtype(field.dtype).itemsize
            size += -(-nbytes // ALIGN) * ALIGN
        self.buffer = context.RawArray("b", max(size, 1))

    def views(self) -> dict[str, np.ndarray]:
        """The fields as numpy arrays over the shared buffer (no copy)."""
        arrays = {}
        for name, field in self.fields.items():
            count = self.rows * int(np.prod(field.shape, dtype=np.int64))
            flat = np.frombuffer(self.buffer, dtype=field.dtype, count=count, offset=self.offsets[name])
            arrays[name] = flat.reshape((self.rows, *field.shape))
        return arrays


def _serve(
    make_copy: Callable[[], Copy], first: int, count: int, shared: SharedArrays, conn: Connection, parent_end: Connection
) -> None:
    """A worker's loop: build ``count`` copies (rows ``first``...), then run commands until told to stop."""
    parent_end.close()  # the parent's end, inherited under fork: its closing must reach us as EOF
    copies: list[Copy] = []
    index = first
    try:
        arrays = shared.views()
        for index in range(first, first + count):
            copies.append(make_copy())
        conn.send(("ok", None))
        while True:
            try:
                command, payload = conn.recv()
            except (EOFError, OSError):  # the parent is gone
                return
            if command == "close":
                conn.send(("ok", None))
                return
            for offset, copy in enumerate(copies):
                index = first + offset
                if command == "step":
                    copy.step(arrays, index)
                elif command == "reset":
                    copy.reset(payload[offset], arrays, index)
                else:
                    raise ValueError(f"unknown command {command!r}")
            conn.send(("ok", None))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the parent reports it
        return
    except Exception:
        try:
            conn.send(("error", (index, traceback.format_exc())))
        except (BrokenPipeError, OSError):
            pass
    finally:
        for copy in copies:
            copy.close()
        conn.close()


def _shutdown(processes: Sequence[Any], conns: Sequence[Connection]) -> None:
    """Stop every worker: ask, wait a moment, then terminate; close the pipes."""
    for conn in conns:
        try:
            conn.send(("close", None))
        except (BrokenPipeError, OSError):
            pass
    for process in processes:
        process.join(JOIN_SECONDS)
        if process.is_alive():
            process.terminate()
            process.join(JOIN_SECONDS)
    for conn in conns:
        conn.close()


def split(copies: int, workers: int) -> list[range]:
    """Copies ``0..copies-1`` in contiguous blocks, as even as possible, one per worker."""
    size, extra = divmod(copies, workers)
    blocks, start = [], 0
    for worker in range(workers):
        stop = start + size + (worker < extra)
        blocks.append(range(start, stop))
        start = stop
    return blocks


class WorkerPool:
    """``copies`` copies made by ``make_copy`` (picklable under spawn/forkserver), split over ``workers`` processes.

    ``context``: a ``multiprocessing`` start method (``"fork"``, ``"spawn"``, ``"forkserver"``) or
    ``None`` for the platform's default.
    """

    def __init__(
        self,
        make_copy: Callable[[], Copy],
        copies: int,
        workers: int,
        fields: Mapping[str, Field],
        context: str | None = None,
    ) -> None:
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise ValueError(f"the number of copies must be a positive integer, got {copies!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= copies:
            raise ValueError(f"workers must be an integer from 1 to the number of copies ({copies}), got {workers!r}")
        ctx = multiprocessing.get_context(context)
        self.blocks = split(copies, workers)
        self.shared = SharedArrays(fields, copies, ctx)
        self.arrays = self.shared.views()
        self.processes: list[Any] = []
        self.conns: list[Connection] = []
        self.closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self.processes, self.conns)
        for block in self.blocks:
            parent_end, child_end = ctx.Pipe()
            process = ctx.Process(
                target=_serve,
                args=(make_copy, block.start, len(block), self.shared, child_end, parent_end),
                name=f"csr_marl-vector-{len(self.processes)}",
                daemon=True,
            )
            process.start()
            child_end.close()
            self.processes.append(process)
            self.conns.append(parent_end)
        self._collect("start")

    def run(self, command: str, payloads: Sequence[Any] | None = None) -> None:
        """Send ``command`` to every worker (with its block's slice of ``payloads``) and wait for all."""
        if self.closed:
            raise RuntimeError("the vector environment is closed")
        for block, conn in zip(self.blocks, self.conns):
            payload = None if payloads is None else [payloads[index] for index in block]
            try:
                conn.send((command, payload))
            except (BrokenPipeError, OSError):
                pass  # a dead worker: _collect reports it
        self._collect(command)

    def _collect(self, command: str) -> None:
        """Every worker's answer; the first failure becomes one WorkerError after the pool is shut down."""
        failures = []
        for worker, (block, conn, process) in enumerate(zip(self.blocks, self.conns, self.processes)):
            where = f"worker {worker} (copies {block.start}-{block.stop - 1})"
            ready = wait([conn, process.sentinel])
            try:
                status, detail = conn.recv() if conn in ready else ("died", None)
            except (EOFError, OSError):
                status, detail = "died", None
            if status == "error":
                index, trace = detail
                failures.append(f"copy {index} in {where} failed during {command}:\n{trace}")
            elif status == "died":
                process.join(JOIN_SECONDS)
                failures.append(f"{where} died during {command} (exit code {process.exitcode})")
        if failures:
            self.close()
            more = f"\n({len(failures) - 1} more worker(s) failed too)" if len(failures) > 1 else ""
            raise WorkerError(failures[0] + more)

    def close(self) -> None:
        """Stop and reap every worker (idempotent)."""
        if not self.closed:
            self.closed = True
            self._finalizer()
