"""What the observation encoder keeps on ``ticket.cache``: the ticket's fixed features, and blocks reused.

A module of its own, left as Python in the compiled build (tools/csr_marl_build.py): it subclasses
numpy's array, which a class compiled by mypyc cannot.
"""

from __future__ import annotations

import numpy as np


class TicketFeatures(np.ndarray):
    """``ticket.cache``: the ticket's fixed features (text, tier, declared labels) as a read-only
    float32 vector, with the packed blocks the encoder reuses while the ticket lives.

    ``head`` is ``ticket_present`` and the fixed features; ``dynamic`` the revealed facts and steps
    done, packed when ``dynamic_key`` (how many facts are revealed, how many steps done) changes: the
    core only ever adds a fact (with its one true value) or a step. Copies and pickles are the plain
    vector (the encoder packs the blocks again).
    """

    __slots__ = ("head", "dynamic_key", "dynamic")
    head: bytes
    dynamic_key: tuple[int, int]
    dynamic: bytes

    def __reduce__(self) -> tuple[object, ...]:
        return np.array(self).__reduce__()

    def __copy__(self) -> np.ndarray:
        return np.array(self)

    def __deepcopy__(self, memo: dict[int, object]) -> np.ndarray:
        return np.array(self)
