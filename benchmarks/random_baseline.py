"""Random-policy baseline: every staff decision uniform over the legal actions (the action mask).

Runs 20 episodes of every shipped scenario (whatever ``csr_marl.scenario_names()`` lists when it runs)
and regenerates ``benchmarks/results/random_baseline.{md,json,csv}`` with the machine and versions.
A scenario whose ticket bank holds tickets out gets two adjacent rows, ``train`` and ``held-out``
(``tickets.split: train`` / ``test``, the same seeds); the validation presets get one (``all``):

    python benchmarks/random_baseline.py            # extra options go to `csr-marl baseline`, e.g. --workers 2
"""

import os
import sys
from pathlib import Path

from csr_marl.cli import app

RESULTS = os.path.relpath(Path(__file__).resolve().parent / "results")

if __name__ == "__main__":
    app(["baseline", "--policy", "random", "--scenario", "all", "--episodes", "20", "--split", "both", "--out", RESULTS,
         *sys.argv[1:]], prog_name="csr-marl")
