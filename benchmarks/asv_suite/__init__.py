"""The speed benchmarks as an airspeed velocity (asv) suite: their history, per commit and machine.

``asv run --python=same --quick`` (from the repository root) measures the installed code once;
``asv run main~5..main`` builds and measures each commit in an environment of its own;
``asv publish && asv preview`` plots the history. The suite wraps ``benchmarks/core_throughput.py`` and
``benchmarks/env_throughput.py``: the ratios it tracks are the ones those scripts judge, each taken
against a reference measured in the same process (bare SimPy, ciw), so that they can be compared
across machines more safely than the raw times can.
"""

import sys
from pathlib import Path

_BENCHMARKS = str(Path(__file__).resolve().parents[1])
if _BENCHMARKS not in sys.path:  # the wrapped scripts (core_throughput.py, env_throughput.py) as modules
    sys.path.insert(0, _BENCHMARKS)
