"""Heuristic baseline: a careful team working from the knowledge base (``csr_marl.policies.heuristic``).

Runs 20 episodes of every shipped scenario (whatever ``csr_marl.scenario_names()`` lists when it runs)
and regenerates ``benchmarks/results/heuristic_baseline.{md,json,csv}`` with the machine and versions.
A scenario whose ticket bank holds tickets out gets two adjacent rows, ``train`` and ``held-out``
(``tickets.split: train`` / ``test``, the same seeds); the validation presets get one (``all``). The
heuristic's knowledge base is the train split, so the held-out row is text it has never seen.
Episode e uses the same seed as in the random baseline, so the two tables compare policies on the
same customers:

    python benchmarks/heuristic_baseline.py         # extra options go to `csr-marl baseline`, e.g. --workers 2
"""

import os
import sys
from pathlib import Path

from csr_marl.cli import app

RESULTS = os.path.relpath(Path(__file__).resolve().parent / "results")

if __name__ == "__main__":
    app(["baseline", "--policy", "heuristic", "--scenario", "all", "--episodes", "20", "--split", "both", "--out", RESULTS,
         *sys.argv[1:]], prog_name="csr-marl")
