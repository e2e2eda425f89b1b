"""Sweep scaling: the same 10-point x 20-replication sweep of standard_day with 1 and with 2 workers.

Target: at least 1.7x faster with 2 workers on 2 cores. The sweep varies ``staffing.resolver`` over
6..15 with the heuristic policy and writes its folder like ``csr-marl sweep`` (CSV rows as replications
finish, summary, manifest; no plot), so simulation and bookkeeping are timed, pool start-up included.
Every worker count must give byte-identical results. On a shared machine, ``--wait-idle`` waits for
idle CPUs before each timing, so that other people's jobs do not count as our overhead.

For scale, the machine's own ceiling is measured too: the throughput of two bare processes, each
simulating half of the runs with no pool and no bookkeeping, over one such process alone. Settings are
interleaved and repeated; the headline ratios are medians of per-round ratios (shared machines are noisy). Writes
``benchmarks/results/sweep_scaling.{md,json}`` after every round:

    python benchmarks/sweep_scaling.py [--replications 20] [--repeats 3]
"""

import argparse
import multiprocessing
import statistics
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
parser.add_argument("--write", action="store_true",
                    help="replace the committed benchmarks/results/sweep_scaling.{md,json} (default: only print)")
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


SETTINGS = ("1 worker", "2 workers", "bare, 1 process, half", "bare, 2 processes")
timings: dict[str, list[float]] = {setting: [] for setting in SETTINGS}
summaries: set[bytes] = set()


def round_ratios() -> tuple[list[float], list[float]]:
    """Per round: sweep speed-up (1 worker / 2 workers) and machine ceiling (2 x half alone / two halves).

    Each ratio compares settings timed back to back, so a slow spell of a shared host cancels out;
    the median over rounds is the headline figure."""
    speedups = [one / two for one, two in zip(timings["1 worker"], timings["2 workers"])]
    ceilings = [2 * half / both for half, both in zip(timings["bare, 1 process, half"], timings["bare, 2 processes"])]
    return speedups, ceilings


def write_report(rounds: int) -> None:
    """Write the figures so far (after every round, so an interrupted run still leaves them)."""
    best = {setting: min(values) for setting, values in timings.items()}
    speedups, ceilings = round_ratios()
    speedup, ceiling = statistics.median(speedups), statistics.median(ceilings)
    identical = len(summaries) == 1
    print(f"after {rounds} round(s): speed-up 1 -> 2 workers {speedup:.2f}x (target {TARGET_SPEEDUP}x); "
          f"machine ceiling {ceiling:.2f}x; identical results: {identical}")
    info = machine()
    payload = {
        "benchmark": "sweep_scaling",
        "generated_at": now(),
        "study": {"scenario": "standard_day", "vary": "staffing.resolver=6..15", "grid_points": len(study.points),
                  "replications": study.replications, "runs": runs, "policy": study.policy, "seed": study.seed},
        "seconds": timings,
        "best_seconds": best,
        "speedup_2_over_1": speedup,
        "speedup_per_round": speedups,
        "machine_ceiling_2_over_1": ceiling,
        "machine_ceiling_per_round": ceilings,
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
{rounds} round(s), the four settings back to back in each; seconds are the best of the rounds,
ratios the median of the per-round ratios (a slow spell of the shared host hits both sides of a ratio).

| setting | seconds | runs/s |
|---|---:|---:|
| sweep, 1 worker | {best["1 worker"]:.2f} | {runs / best["1 worker"]:.1f} |
| sweep, 2 workers | {best["2 workers"]:.2f} | {runs / best["2 workers"]:.1f} |
| bare process, half the runs, alone | {best["bare, 1 process, half"]:.2f} | {runs / 2 / best["bare, 1 process, half"]:.1f} |
| two bare processes, half each | {best["bare, 2 processes"]:.2f} | {runs / best["bare, 2 processes"]:.1f} |

- Speed-up with 2 workers over 1: **{speedup:.2f}x** (target {TARGET_SPEEDUP}x: {"met" if speedup >= TARGET_SPEEDUP else "missed"}); per round: {", ".join(f"{r:.2f}" for r in speedups)}.
- The machine's own ceiling, two bare processes over one: {ceiling:.2f}x; per round: {", ".join(f"{r:.2f}" for r in ceilings)}.
- Results byte-identical for every worker count: {identical}.
- generated: {payload["generated_at"]} by `python benchmarks/sweep_scaling.py --replications {args.replications} --repeats {args.repeats} --wait-idle {args.wait_idle:g}`
- machine: {info["platform"]}, {info["processor"]}, {info["cpu_count"]} CPUs
- versions: {", ".join(f"{k} {v}" for k, v in payload["versions"].items())}
""")


for round_ in range(args.repeats):
    timings["1 worker"].append(sweep_seconds(1, summaries))
    timings["2 workers"].append(sweep_seconds(2, summaries))
    timings["bare, 1 process, half"].append(bare_seconds(1))
    timings["bare, 2 processes"].append(bare_seconds(2))
    print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items()))
    if args.write:
        write_report(round_ + 1)
