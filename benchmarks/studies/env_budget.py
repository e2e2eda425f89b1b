"""The AEC target's budget: what the content work of `standard_day` costs one decision.

`env_throughput.py` sets the AEC env against bare SimPy (target: `raw_env` agent-steps/s >= 0.35x
bare-SimPy customers/s). At a machine's bare-SimPy rate that allows 1 / (0.35 x rate) seconds a step.
This script measures, in one process and interleaved, a random masked team through `raw_env` and the
core alone (no environment) on four variants of `standard_day`:

* `full`: the scenario as it is;
* `no grading`: every documented reply's grade replaced by a constant one (the rubric never runs);
* `no noise`: `tickets.noise.enabled: false` (clean template text: no typos, no mixed topics);
* `neither`: both.

The variants are what-ifs, not options of the environment: the grade and the noisy text are part of
the scenario's rewards and observations. The figures tell how much of a step each costs, and what is
left of the budget for the environment itself once the core has decided:

    python benchmarks/studies/env_budget.py                 # 8,000 agent-steps per variant and round
    python benchmarks/studies/env_budget.py --steps 20000

Every variant and round plays seeds of its own (the core's caches work by content), and each keeps its
best of `--rounds` rounds.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the throughput benchmarks it builds on

from core_throughput import bare_simpy, core_build  # noqa: E402
from env_throughput import FRESH, aec_run, core_run  # noqa: E402

import csr_marl
from csr_marl.sim import customers, responses

VARIANTS: dict[str, tuple[dict[str, object] | None, bool]] = {  # name -> (overrides, constant grade)
    "full": (None, False),
    "no grading": (None, True),
    "no noise": ({"tickets.noise.enabled": False}, False),
    "neither": ({"tickets.noise.enabled": False}, True),
}
CONSTANT = responses.ReplyGrade(score=0.25, parts=dict(responses.WEIGHTS), notes=())


@contextmanager
def constant_grades(on: bool) -> Iterator[None]:
    """Within the block, closing a ticket with the documented reply costs a function call."""
    real = customers.grade_documented
    if on:
        customers.grade_documented = lambda ticket, resolvable=None: CONSTANT
    try:
        yield
    finally:
        customers.grade_documented = real


def measure(run: Callable[[], float]) -> float:
    gc.collect()
    return run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8_000, help="agent-steps per variant and round")
    parser.add_argument("--rounds", type=int, default=3, help="each variant keeps its best round")
    args = parser.parse_args()
    best: dict[tuple[str, str], float] = {}
    simpy_rate = 0.0
    aec_run(csr_marl.raw_env, "standard_day", 500)  # load the bank first
    for r in range(args.rounds):
        start = time.perf_counter()
        bare_simpy(20_000, seed=r)
        simpy_rate = max(simpy_rate, 20_000 / (time.perf_counter() - start))
        for i, (name, (overrides, constant)) in enumerate(VARIANTS.items()):
            seed = FRESH * (r + 1) + FRESH // 10 * i  # seeds no variant or round has played
            make = functools.partial(csr_marl.raw_env, overrides=overrides)
            scenario = csr_marl.load_scenario("standard_day", overrides)
            with constant_grades(constant):
                aec = measure(lambda: aec_run(make, "standard_day", args.steps, seed)[0])
                core = measure(lambda: core_run(scenario, args.steps, seed + FRESH // 20))
            best[name, "aec"] = max(best.get((name, "aec"), 0.0), aec)
            best[name, "core"] = max(best.get((name, "core"), 0.0), core)
    budget = 1e6 / (0.35 * simpy_rate)
    print(f"csr_marl {csr_marl.__version__} ({core_build()}) · best of {args.rounds} interleaved rounds of {args.steps:,} agent-steps")
    print(f"bare SimPy M/M/c {simpy_rate:,.0f} customers/s: the AEC target (0.35x) allows {budget:.1f} us a step")
    print("| variant | AEC raw_env | / bare SimPy | us a step | core alone | / bare SimPy | us a decision | env's share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in VARIANTS:
        aec, core = best[name, "aec"], best[name, "core"]
        print(f"| {name} | {aec:,.0f}/s | {aec / simpy_rate:.3f}x | {1e6 / aec:.1f} | {core:,.0f}/s | "
              f"{core / simpy_rate:.3f}x | {1e6 / core:.1f} | {1e6 / aec - 1e6 / core:.1f} us |")


if __name__ == "__main__":
    main()
