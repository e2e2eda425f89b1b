"""The environments: a random masked team on ``standard_day`` through the AEC and parallel APIs
(``benchmarks/env_throughput.py``; its results page says how to read the ratios)."""

from __future__ import annotations

from core_throughput import bare_simpy, fresh_heap
from env_throughput import aec_run, parallel_run, step_cost

import csr_marl

from ._sizes import AGENT_STEPS, ARRIVALS, FRESH_SEED

#: AEC steps timed in each case of the scale ratio (the script: at least 1,000 a round).
SCALE_STEPS = 1_000


def _aec_rate(make) -> float:
    return fresh_heap(lambda: aec_run(make, "standard_day", AGENT_STEPS, FRESH_SEED)[0])


class Ratios:
    """The ratios the environments' targets judge, each against a reference measured just before."""

    timeout = 900.0

    def setup(self) -> None:
        aec_run(csr_marl.raw_env, "standard_day", 500)  # load the ticket bank outside the timed runs

    def track_aec_over_bare_simpy(self) -> float:
        return _aec_rate(csr_marl.raw_env) / fresh_heap(lambda: bare_simpy(ARRIVALS))

    track_aec_over_bare_simpy.unit = "x bare SimPy"  # type: ignore[attr-defined]

    def track_env_over_bare_simpy(self) -> float:
        return _aec_rate(csr_marl.env) / fresh_heap(lambda: bare_simpy(ARRIVALS))

    track_env_over_bare_simpy.unit = "x bare SimPy"  # type: ignore[attr-defined]

    def track_parallel_over_aec(self) -> float:
        decisions = fresh_heap(lambda: parallel_run("standard_day", AGENT_STEPS // 4, FRESH_SEED + 5_000)[0])
        return decisions / _aec_rate(csr_marl.raw_env)

    track_parallel_over_aec.unit = "x AEC steps"  # type: ignore[attr-defined]

    def track_scale(self) -> float:
        few = step_cost(4, 10, SCALE_STEPS, FRESH_SEED + 50_000)[0]
        many = step_cost(200, 5_000, SCALE_STEPS, FRESH_SEED + 55_000)[0]
        return many / few

    track_scale.unit = "x a small floor's step"  # type: ignore[attr-defined]
