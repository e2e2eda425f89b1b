"""Does the calibrated scenario reproduce the day that made its log? KPI coverage, with and without
parameter uncertainty.

Two generators (the truth), each simulated ``--generator`` times for each KPI's mean and 95% CI:

- ``example``: the committed log ``scenarios/examples/contacts.csv`` (five days of the standard day
  with 10 resolvers, no triage or desk, 20-minute exponential patience; ``contact_log_example.py``)
  and the committed ``scenarios/examples/calibrated_day.yaml`` calibrated from it (base
  ``validation/mmc``: one FIFO queue, its own ticket bank and threshold);
- ``roundtrip``: ``--days`` days simulated here from a scenario calibrate can represent (the
  calibrate tests' truth: ``validation/mmc`` with a three-level profile, 5 resolvers, 3-minute
  patience, a tier mix), calibrated onto the same base, so only the fitted parameters differ.

The calibrated scenario runs ``--replications`` times with the fitted parameters as the truth
(``fixed``), and as many times with each run's parameters drawn from their fitted distributions
(``drawn``: ``csr-marl calibrate --check``, :mod:`csr_marl.whatif.parameter_uncertainty`), the same
simulation seeds. Over every KPI the generator defines, it counts (a) the calibrated mean inside the
generator's CI and (b) the generator's mean inside the calibrated CI; a KPI the calibrated scenario
leaves undefined counts as outside. Nothing is written:

    python benchmarks/studies/calibrate_coverage.py                       # both, 40 replications, generator 200
    python benchmarks/studies/calibrate_coverage.py --study roundtrip --days 3 --replications 20
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contact_log_example import TRUTH  # noqa: E402

import csr_marl  # noqa: E402
from csr_marl.config.loading import load_scenario  # noqa: E402
from csr_marl.config.scenario import Scenario  # noqa: E402
from csr_marl.whatif.calibrate import Calibration, calibrate, calibration_overrides, read_contact_log  # noqa: E402
from csr_marl.whatif.executors import executor_scope  # noqa: E402
from csr_marl.whatif.parameter_uncertainty import kpis_with_parameter_uncertainty  # noqa: E402
from csr_marl.whatif.records import metric_names  # noqa: E402
from csr_marl.whatif.replications import Replication, run_replications  # noqa: E402
from csr_marl.whatif.summary import Estimate, estimates  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GENERATOR_SEED = 1_000  # the logs' days are seeds 0, 1, ... of csr_marl.simulate; these runs are others
ROUNDTRIP = {  # tests/test_calibrate.py's truth
    "horizon_minutes": 360, "warmup_minutes": 0, "arrivals": {"profile": [[0, 90], [120, 150], [240, 60]]},
    "staffing.resolver": 5, "customers.patience": {"dist": "exponential", "mean_minutes": 3.0},
    "customers.tier_mix": {"basic": 0.6, "premium": 0.3, "enterprise": 0.1},
}


def example() -> tuple[Scenario, Scenario, Calibration]:
    """The committed log's generator, the committed calibrated scenario and the fit."""
    fit = calibrate(read_contact_log(ROOT / "scenarios" / "examples" / "contacts.csv", 30), 30, 480)
    return load_scenario("standard_day", TRUTH), load_scenario("examples/calibrated_day"), fit


def roundtrip(days: int) -> tuple[Scenario, Scenario, Calibration]:
    """``days`` days of the round-trip truth as a log, calibrated onto ``validation/mmc``."""
    truth = load_scenario("validation/mmc", ROUNDTRIP)
    rows = []
    for day in range(days):
        for record in csr_marl.simulate(truth, "expert", seed=day, log=True).log or []:
            if record["outcome"] == "open":
                continue
            rows.append({"day": day, "arrival": record["arrival"], "end": record["end"], "tier": record["tier"],
                         "answered": "" if record["answered_at"] is None else record["answered_at"],
                         "abandoned": int(record["outcome"] == "abandoned"), "category": record["category"]})
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "contacts.csv"
        with log.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        fit = calibrate(read_contact_log(log, 30), 30, ROUNDTRIP["horizon_minutes"])
    return truth, load_scenario("validation/mmc", calibration_overrides(fit)), fit


def inside(value: float, estimate: Estimate) -> bool:
    return not math.isnan(value) and not math.isnan(estimate.mean) and estimate.low <= value <= estimate.high


def study(name: str, truth: Scenario, calibrated: Scenario, fit: Calibration, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    names = list(metric_names())
    with executor_scope(None, args.workers) as pool:
        tasks = [Replication(r, truth, "expert", GENERATOR_SEED, r) for r in range(args.generator)]
        records = [record for _, record in sorted(run_replications(tasks, pool), key=lambda pair: pair[0].key)]
        generator = estimates(records, names)
        ours = kpis_with_parameter_uncertainty(calibrated, fit, args.replications, args.seed, policy="expert",
                                               names=names, executor=pool)
    kpis = [name for name in names if not math.isnan(generator[name].mean)]
    print(f"## {name}: {fit.contacts} contacts over {fit.days} day(s)\n\ngenerator {args.generator} runs; calibrated "
          f"{args.replications} runs per column; {len(kpis)} KPIs the generator defines; {time.perf_counter() - started:.0f} s\n")
    print("| KPI | generator [95% CI] | fixed [95% CI] | drawn [95% CI] |")
    print("|---|---:|---:|---:|")
    fmt = lambda e: f"{e.mean:.4g} [{e.low:.4g}, {e.high:.4g}]"  # noqa: E731
    for kpi in kpis:
        print(f"| {kpi} | {fmt(generator[kpi])} | {fmt(ours['fixed'][kpi])} | {fmt(ours['drawn'][kpi])} |")
    print()
    for which in ("fixed", "drawn"):
        a = sum(inside(ours[which][kpi].mean, generator[kpi]) for kpi in kpis)
        b = sum(inside(generator[kpi].mean, ours[which][kpi]) for kpi in kpis)
        print(f"{which:5s}: calibrated mean inside the generator's CI {a}/{len(kpis)}; "
              f"generator's mean inside the calibrated CI {b}/{len(kpis)}")
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("example", "roundtrip"), action="append", help="default: both")
    parser.add_argument("--replications", type=int, default=40, help="calibrated-scenario runs per column (default 40)")
    parser.add_argument("--generator", type=int, default=200, help="runs of the generator (default 200)")
    parser.add_argument("--days", type=int, default=10, help="roundtrip: days of log (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the calibrated runs and the parameter draws")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    for name in args.study or ("example", "roundtrip"):
        study(name, *(example() if name == "example" else roundtrip(args.days)), args)


if __name__ == "__main__":
    main()
