"""Machine instructions per ticket of `simulate` (`mmc`, and `standard_day` with the heuristic team), bare
SimPy and ciw, counted by Valgrind's callgrind.

Wall-clock ratios on a shared machine move with its load; instruction counts do not. Each contender
runs in a child process under callgrind twice, with 500 and with 5,500 arrivals; the difference
divided by 5,000 is its cost per ticket, start-up and imports cancelled out:

    python benchmarks/core_instructions.py              # needs valgrind; a few minutes
    PYTHONPATH=/path/to/other/checkout python benchmarks/core_instructions.py --only simulate

Instructions are not time (cache misses and branch mispredictions do not show), but they are exact and
repeatable: use them to compare two versions of the core, and `core_throughput.py` for the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SMALL, LARGE = 500, 5_500
CONTENDERS = ("simulate", "standard_day", "bare SimPy", "ciw")


def child(contender: str, n_tickets: int) -> None:
    """Run one contender on ``n_tickets`` arrivals (what callgrind counts)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import core_throughput

    if contender == "simulate":
        core_throughput.csr_marl_run("mmc", n_tickets)
    elif contender == "standard_day":  # whole shifts (about 650 arrivals each) until n_tickets arrived
        core_throughput.csr_marl_run("standard_day", n_tickets)
    elif contender == "bare SimPy":
        core_throughput.bare_simpy(n_tickets)
    else:
        core_throughput.ciw_reference(n_tickets)


def instructions(contender: str, n_tickets: int) -> int:
    """Instructions callgrind counts for a child process running ``contender``."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-W", "ignore",
               __file__, "--child", contender, str(n_tickets)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # dict layouts, hence counts, repeat exactly
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stderr
    return int(re.search(r"Collected : (\d+)", output).group(1))  # type: ignore[union-attr]


def per_ticket(contender: str) -> float:
    return (instructions(contender, LARGE) - instructions(contender, SMALL)) / (LARGE - SMALL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=CONTENDERS, help="count one contender only")
    parser.add_argument("--child", nargs=2, metavar=("CONTENDER", "TICKETS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    counts = {name: per_ticket(name) for name in ([args.only] if args.only else CONTENDERS)}
    for name, count in counts.items():
        print(f"{name:<10} {count:>10,.0f} instructions per ticket")
    if len(counts) == len(CONTENDERS):
        mmc = counts["simulate"]
        print(f"simulate mmc / ciw        = {counts['ciw'] / mmc:.3f}x (by instructions; target >= 1.0x)")
        print(f"simulate mmc / bare SimPy = {counts['bare SimPy'] / mmc:.3f}x (by instructions; target >= 0.5x)")
        day = counts["bare SimPy"] / counts["standard_day"]
        print(f"standard_day / bare SimPy = {day:.3f}x (by instructions; target >= 1.5x this ratio at 4da2260: "
              f"count it with PYTHONPATH at a tree of that commit)")


if __name__ == "__main__":
    main()
