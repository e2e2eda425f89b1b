"""CLI start-up: how long ``csr-marl --help`` and ``csr-marl --version`` take, beside a bare typer import.

Target: ``csr-marl --help`` under one second. Any typer command pays Python's start-up and
``import typer``; ``python -c "import typer"`` is that floor, so the table also gives each command's
cost over it. The commands run as ``python -m csr_marl`` from this checkout (what the ``csr-marl``
script runs, less the script's own shim). Settings are interleaved over ``--rounds`` rounds, each a fresh
process; the medians and the best are reported (shared machines are noisy). ``simulate --help``
imports that command's module (numpy, pydantic, SimPy): it shows what lazy loading saves the others.

    python benchmarks/cli_startup.py [--rounds 15] [--write]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from csr_marl.whatif.provenance import machine, now, versions
from csr_marl.whatif.store import atomic_write, write_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TARGET_SECONDS = 1.0
SETTINGS = {
    'python -c "import typer"': [sys.executable, "-c", "import typer"],
    "csr-marl --version": [sys.executable, "-m", "csr_marl", "--version"],
    "csr-marl --help": [sys.executable, "-m", "csr_marl", "--help"],
    "csr-marl simulate --help": [sys.executable, "-m", "csr_marl", "simulate", "--help"],
}

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of every setting")
parser.add_argument("--write", action="store_true", help="replace the committed benchmarks/results/cli_startup.{md,json}")
args = parser.parse_args()

environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, cwd=ROOT)
    return time.perf_counter() - started


load_before = os.getloadavg()[0]
times: dict[str, list[float]] = {name: [] for name in SETTINGS}
for _ in range(args.rounds):
    for name, argv in SETTINGS.items():
        times[name].append(seconds(argv))
floor = statistics.median(times['python -c "import typer"'])
rows = []
for name, values in times.items():
    median = statistics.median(values)
    rows.append({"command": name, "median_s": median, "best_s": min(values), "over_typer_s": median - floor})
help_median = statistics.median(times["csr-marl --help"])
verdict = "met" if help_median < TARGET_SECONDS else "missed"
table = "\n".join(
    f"| `{r['command']}` | {r['median_s']:.3f} | {r['best_s']:.3f} | {r['over_typer_s']:+.3f} |" for r in rows
)
summary = (
    f"`csr-marl --help`: median {help_median:.3f} s (target < {TARGET_SECONDS:g} s: **{verdict}**), "
    f"{help_median / floor:.1f}x a bare `import typer` ({floor:.3f} s)."
)
print(f"| command | median s | best s | over import typer, s |\n|---|---:|---:|---:|\n{table}\n\n{summary}")
print(f"load average before: {load_before:.2f}, after: {os.getloadavg()[0]:.2f}")

if args.write:
    payload = {"rows": rows, "rounds": args.rounds, "target_seconds": TARGET_SECONDS, "verdict": verdict,
               "load_average": [load_before, os.getloadavg()[0]], "machine": machine(), "versions": versions(), "date": now()}
    write_json(RESULTS / "cli_startup.json", payload)
    atomic_write(RESULTS / "cli_startup.md", f"""# CLI start-up

`python benchmarks/cli_startup.py --write` ({args.rounds} interleaved rounds, a fresh process each; load
average {load_before:.2f} before and {os.getloadavg()[0]:.2f} after; {machine()['cpu_count']} CPUs,
{machine()['platform']}, Python {versions()['python']}).

| command | median s | best s | over import typer, s |
|---|---:|---:|---:|
{table}

{summary}

`csr-marl --help` and `--version` import typer and the command table only: each command's module, and
with it numpy, pydantic and SimPy, is imported when that command runs or shows its own help
(`csr-marl simulate --help` above). In 0.1.0, `csr-marl --help` imported every command and the whole
package (the same machine idle: 0.63 s, about 5x the typer floor; 2.8–4.9 s on a loaded two-core
machine).
""")
