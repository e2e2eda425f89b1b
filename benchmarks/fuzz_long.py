"""Long fuzz profile: >= 2,000 generated scenarios x policies x APIs, every property checked.

The cases and the checks are those of the CI's fast profile (``tests/fuzz_cases.py``); here hypothesis
generates many more (derandomized: the same cases on every run), and a failing case does not stop the
run: each is recorded with its reproducer (base scenario, overrides, policy, API, seed), to replay with
``fuzz_cases.check_case(*case)``.

    python benchmarks/fuzz_long.py                  # 2,000 cases, prints the summary
    python benchmarks/fuzz_long.py --cases 5000 --write   # also replaces benchmarks/results/fuzz_long.{md,json}

Needs the dev extra (hypothesis).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fuzz_cases import cases, check_case  # noqa: E402

from csr_marl.whatif.provenance import machine, now, versions  # noqa: E402
from csr_marl.whatif.store import atomic_write, write_json  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--cases", type=int, default=2000)
parser.add_argument("--write", action="store_true", help="replace benchmarks/results/fuzz_long.{md,json}")
args = parser.parse_args()

outcomes: collections.Counter[str] = collections.Counter()
by_api: collections.Counter[str] = collections.Counter()
failures: list[dict] = []
slowest = [0.0, None]


@settings(max_examples=args.cases, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(cases)
def run(case) -> None:
    started = time.perf_counter()
    try:
        outcome = check_case(*case)
    except Exception as error:  # noqa: BLE001 - every failure is recorded, the run goes on
        outcome = "failed"
        failures.append({"case": list(case), "error": f"{type(error).__name__}: {error}"})
    elapsed = time.perf_counter() - started
    if elapsed > slowest[0]:
        slowest[:] = [elapsed, list(case)]
    outcomes[outcome] += 1
    if outcome == "ran":
        by_api[case[3]] += 1
    done = sum(outcomes.values())
    if done % 250 == 0:
        print(f"{done} cases: {dict(outcomes)}", flush=True)


started = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # shifts after a shortened horizon warn, by design
    run()
seconds = time.perf_counter() - started
total = sum(outcomes.values())
kinds = collections.Counter(f["error"].split(":")[0] for f in failures)
print(f"{total} cases in {seconds:.0f} s ({100 * seconds / max(total, 1):.1f} s per 100): ran {outcomes['ran']} "
      f"({dict(by_api)}), refused at load {outcomes['refused']}, failed {outcomes['failed']} {dict(kinds)}")
print(f"slowest case {slowest[0]:.2f} s")
for failure in failures[:20]:
    print("FAILED", failure["error"], json.dumps(failure["case"], default=str)[:400])

if args.write:
    info = machine()
    payload = {
        "generated_at": now(), "command": " ".join(["python", "benchmarks/fuzz_long.py", *sys.argv[1:]]),
        "machine": info, "versions": versions(), "cases": total, "seconds": round(seconds, 1),
        "outcomes": dict(outcomes), "ran_by_api": dict(by_api), "failures": failures,
        "slowest_case_seconds": round(slowest[0], 3),
    }
    write_json(HERE / "results" / "fuzz_long.json", payload)
    atomic_write(HERE / "results" / "fuzz_long.md", f"""# Fuzz suite, long profile

{total} generated cases (derandomized hypothesis: the same cases on every run), each a shipped scenario
with random overrides across the whole schema, a policy (heuristic, random, fifo, escalate_all) and an
API (the core alone, the AEC env with a random masked policy, the parallel env). Properties: loading
succeeds or fails with one line naming a field; no exception; the run ends within its decision cap and
{20} s; conservation; KPIs finite (NaN only for an empty ratio), non-negative, rates and shares in [0, 1];
observations inside their spaces; the acting agent's mask equals the core's legal actions.

| outcome | cases |
|---|---:|
| ran to the end (simulate / AEC / parallel) | {outcomes['ran']} ({by_api['simulate']} / {by_api['aec']} / {by_api['parallel']}) |
| refused at load with one line | {outcomes['refused']} |
| **failed** | **{outcomes['failed']}** |

{seconds:.0f} s in all ({100 * seconds / max(total, 1):.1f} s per 100 cases); slowest case {slowest[0]:.2f} s.

- generated: {payload["generated_at"]} by `{payload["command"]}`
- machine: {info["platform"]}, {info["cpu_count"]} CPUs
- versions: {", ".join(f"{k} {v}" for k, v in payload["versions"].items())}
""")
sys.exit(1 if failures else 0)
