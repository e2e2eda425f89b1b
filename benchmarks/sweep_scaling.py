"""Sweep scaling: the same 10-point x 20-replication sweep of standard_day with 1 and with 2 workers.

Target: at least 1.7x faster with 2 workers on 2 cores. The sweep varies ``staffing.resolver`` over
6..15 with the heuristic policy and writes its folder like ``csr-marl sweep`` (CSV rows as replications
finish, summary, manifest; no plot), so simulation and bookkeeping are timed, pool start-up included.
Every worker count must give byte-identical results. On a shared machine, ``--wait-idle`` waits for
idle CPUs before each timing, so that other people's jobs do not count as our overhead.

For scale, the machine's own ceiling is measured too: the throughput of two bare processes, each
simulating half of the runs with no pool and no bookkeeping, over one such process alone. Settings are
interleaved and repeated; the best time of each is kept (shared machines are noisy). Writes
``benchmarks/results/sweep_scaling.{md,json}`` after every round:

    python benchmarks/sweep_scaling.py [--replications 20] [--repeats 3]
"""

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from csr_marl.whatif import make_executor, run_replication, run_sweep, sweep_study
from csr_marl.whatif.provenance import machine, now, versions
from csr_marl.whatif.store import atomic_write, write_json

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_SPEEDUP = 1.7

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--replications", type=int, default=20)
parser.add_argument("--repeats", type=int, default=3, help="rounds of every setting; the best time is kept")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                    help="on a shared machine, before each timing wait up to this long for idle CPUs (Linux)")
args = parser.parse_args()

study = sweep_study("standard_day", ["staffing.resolver=6..15"], replications=args.replications, seed=args.seed)
tasks = study.tasks()
runs = len(tasks)


def idle_share(seconds: float) -> float:
    """Share of CPU time spent idle over the next ``seconds`` (from /proc/stat; 1.0 where unknown)."""
    def sample() -> list[int]:
        with open("/proc/stat") as stat:
            return [int(x) for x in stat.readline().split()[1:]]
    try:
        before = sample()
        time.sleep(seconds)
        after = sample()
    except OSError:
        return 1.0
    delta = [b - a for a, b in zip(before, after)]
    return (delta[3] + delta[4]) / max(sum(delta), 1)


def wait_until_idle() -> None:
    deadline = time.monotonic() + args.wait_idle
    while time.monotonic() < deadline and idle_share(2.0) < 0.9:
        pass


def sweep_seconds(workers: int, summaries: set[bytes]) -> float:
    wait_until_idle()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        with make_executor("process", workers) as pool:
            run_sweep(study, folder, executor=pool, plot_kpi=None)
        elapsed = time.perf_counter() - started
        summaries.add((Path(folder) / "summary.csv").read_bytes())
    return elapsed


def simulate_all(share: list) -> None:
    for task in share:
        run_replication(task)


def bare_seconds(processes: int) -> float:
    """Wall time of ``processes`` bare processes, each simulating half of the runs."""
    wait_until_idle()
    halves = [tasks[0::2], tasks[1::2]][:processes]
    workers = [multiprocessing.Process(target=simulate_all, args=(half,)) for half in halves]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - started


best = {"1 worker": float("inf"), "2 workers": float("inf"), "bare, 1 process, half": float("inf"), "bare, 2 processes": float("inf")}
summaries: set[bytes] = set()
def write_report(rounds: int) -> None:
    """Write the figures so far (after every round, so an interrupted run still leaves them)."""
    speedup = best["1 worker"] / best["2 workers"]
    ceiling = 2 * best["bare, 1 process, half"] / best["bare, 2 processes"]
    identical = len(summaries) == 1
    print(f"after {rounds} round(s): speed-up 1 -> 2 workers {speedup:.2f}x (target {TARGET_SPEEDUP}x); "
          f"machine ceiling {ceiling:.2f}x; identical results: {identical}")
    info = machine()
    payload = {
        "benchmark": "sweep_scaling",
        "generated_at": now(),
        "study": {"scenario": "standard_day", "vary": "staffing.resolver=6..15", "grid_points": len(study.points),
                  "replications": study.replications, "runs": runs, "policy": study.policy, "seed": study.seed},
        "best_seconds": best,
        "speedup_2_over_1": speedup,
        "machine_ceiling_2_over_1": ceiling,
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
        "identical_results": identical,
        "rounds": rounds,
        "wait_idle_seconds": args.wait_idle,
        "machine": info,
        "versions": versions(),
    }
    write_json(RESULTS / "sweep_scaling.json", payload)
    atomic_write(RESULTS / "sweep_scaling.md", f"""# Sweep scaling

`standard_day`, `--vary staffing.resolver=6..15` (10 points) x {study.replications} replications = {runs} runs,
heuristic policy, output folder written as by `csr-marl sweep` (no plot), pool start-up included.
Best of {rounds} interleaved round(s).

| setting | seconds | runs/s |
|---|---:|---:|
| sweep, 1 worker | {best["1 worker"]:.2f} | {runs / best["1 worker"]:.1f} |
| sweep, 2 workers | {best["2 workers"]:.2f} | {runs / best["2 workers"]:.1f} |
| bare process, half the runs, alone | {best["bare, 1 process, half"]:.2f} | {runs / 2 / best["bare, 1 process, half"]:.1f} |
| two bare processes, half each | {best["bare, 2 processes"]:.2f} | {runs / best["bare, 2 processes"]:.1f} |

- Speed-up with 2 workers over 1: **{speedup:.2f}x** (target {TARGET_SPEEDUP}x: {"met" if speedup >= TARGET_SPEEDUP else "missed"}).
- The machine's own ceiling, two bare processes over one: {ceiling:.2f}x.
- Results byte-identical for every worker count: {identical}.
- generated: {payload["generated_at"]} by `python benchmarks/sweep_scaling.py --replications {args.replications} --repeats {args.repeats} --wait-idle {args.wait_idle:g}`
- machine: {info["platform"]}, {info["processor"]}, {info["cpu_count"]} CPUs
- versions: {", ".join(f"{k} {v}" for k, v in payload["versions"].items())}
""")


for round_ in range(args.repeats):
    best["1 worker"] = min(best["1 worker"], sweep_seconds(1, summaries))
    best["2 workers"] = min(best["2 workers"], sweep_seconds(2, summaries))
    best["bare, 1 process, half"] = min(best["bare, 1 process, half"], bare_seconds(1))
    best["bare, 2 processes"] = min(best["bare, 2 processes"], bare_seconds(2))
    print(f"round {round_ + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()))
    write_report(round_ + 1)
