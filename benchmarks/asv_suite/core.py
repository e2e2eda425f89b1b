"""The core: ``csr_marl.simulate`` against bare SimPy and ciw on the same M/M/4 model
(``benchmarks/core_throughput.py``; its results page says how to read the ratios)."""

from __future__ import annotations

import itertools

from core_throughput import DAY_SEEDS, bare_simpy, ciw_reference, csr_marl_run, fresh_heap

import csr_marl
from csr_marl.sim import COMPILED

from ._sizes import ARRIVALS

#: standard_day is played in whole shifts of about 750 tickets; fewer of them keep a run short.
DAY_ARRIVALS = ARRIVALS // 4


class Ratios:
    """The ratios the core's targets judge, each side measured back to back after a full collection."""

    timeout = 600.0

    def track_mmc_over_bare_simpy(self) -> float:
        return fresh_heap(lambda: csr_marl_run("mmc", ARRIVALS)) / fresh_heap(lambda: bare_simpy(ARRIVALS))

    track_mmc_over_bare_simpy.unit = "x bare SimPy"  # type: ignore[attr-defined]

    def track_mmc_over_ciw(self) -> float:
        return fresh_heap(lambda: csr_marl_run("mmc", ARRIVALS)) / fresh_heap(lambda: ciw_reference(ARRIVALS))

    track_mmc_over_ciw.unit = "x ciw"  # type: ignore[attr-defined]

    def track_standard_day_over_bare_simpy(self) -> float:
        day = fresh_heap(lambda: csr_marl_run("standard_day", DAY_ARRIVALS, seed=DAY_SEEDS))
        return day / fresh_heap(lambda: bare_simpy(ARRIVALS))

    track_standard_day_over_bare_simpy.unit = "x bare SimPy"  # type: ignore[attr-defined]


def track_compiled_core() -> int:
    """1 where the compiled core (mypyc) ran these benchmarks, 0 for the pure-Python build."""
    return int(COMPILED)


track_compiled_core.unit = "compiled"  # type: ignore[attr-defined]


class Simulate:
    """Wall time of one run of ``simulate`` with the heuristic team: 2,000 tickets of ``mmc``, one
    shift of ``standard_day``. Each call plays a new seed, so the content caches see new texts."""

    params = ["mmc", "standard_day"]
    param_names = ["scenario"]
    timeout = 300.0

    def setup(self, scenario: str) -> None:
        overrides = {"max_tickets": 2_000, "horizon_minutes": 2_600, "warmup_minutes": 0} if scenario == "mmc" else None
        self.scenario = csr_marl.load_scenario(scenario, overrides=overrides)
        self.seeds = itertools.count(DAY_SEEDS)

    def time_simulate(self, scenario: str) -> None:
        csr_marl.simulate(self.scenario, policy="heuristic", seed=next(self.seeds))
