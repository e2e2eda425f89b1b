"""pass^k as tau-bench defines it: how reliably a task succeeds in *every* one of k tries.

A task tried ``n`` times with ``c`` successes passes k tries drawn without replacement from those n
with probability C(c, k) / C(n, k); pass^k is its mean over tasks. pass^1 is the plain success rate;
pass^k falls with k unless the agent succeeds consistently (tau-bench, Yao et al. 2024, eq. 1).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from math import comb


def pass_hat_k(outcomes: Mapping[Hashable, Sequence[bool]], k: int) -> float:
    """Mean over tasks of C(c, k) / C(n, k), ``outcomes`` mapping each task to its n tries' successes.

    Every task needs at least ``k`` tries; NaN when there is no task.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not outcomes:
        return float("nan")
    total = 0.0
    for task, tries in outcomes.items():
        n, c = len(tries), sum(bool(t) for t in tries)
        if n < k:
            raise ValueError(f"task {task!r} has {n} tries, fewer than k={k}")
        total += comb(c, k) / comb(n, k)
    return total / len(outcomes)


def pass_hat_curve(outcomes: Mapping[Hashable, Sequence[bool]], k: int) -> dict[int, float]:
    """``{j: pass^j}`` for j = 1..k (the curve tau-bench plots)."""
    return {j: pass_hat_k(outcomes, j) for j in range(1, k + 1)}


def group_tries(rows: Iterable[tuple[Hashable, int, bool]], tries: int) -> dict[Hashable, list[bool]]:
    """``(task, try index, success)`` rows -> each task's ``tries`` outcomes; a try that never met
    the task (the task did not come up in it) is a failure."""
    grouped: dict[Hashable, list[bool]] = {}
    for task, index, success in rows:
        slots = grouped.setdefault(task, [False] * tries)
        slots[index] = slots[index] or bool(success)
    return grouped
