"""The non-RL baseline ladder: ``declared_labels`` and ``text_classifier`` (``csr_marl.policies.baselines``).

Runs 20 episodes of every shipped scenario for each, train and held-out rows side by side (the same
seeds as ``random_baseline.py`` and ``heuristic_baseline.py``, so every table compares policies on
the same customers), and regenerates ``benchmarks/results/<policy>_baseline.{md,json,csv}``. Both are
fitted on the train split only; ``text_classifier`` needs the ``baselines`` extra (scikit-learn).

    python benchmarks/baseline_ladder.py                    # extra options go to `csr-marl baseline`
    python benchmarks/baseline_ladder.py --workers 2
"""

import os
import sys
from pathlib import Path

from csr_marl.cli import app

RESULTS = os.path.relpath(Path(__file__).resolve().parent / "results")
LADDER = ("declared_labels", "text_classifier")

if __name__ == "__main__":
    for policy in LADDER:
        try:
            app(["baseline", "--policy", policy, "--scenario", "all", "--episodes", "20", "--split", "both",
                 "--out", RESULTS, *sys.argv[1:]], prog_name="csr-marl")
        except SystemExit as done:  # typer exits after each command
            if done.code:
                raise
