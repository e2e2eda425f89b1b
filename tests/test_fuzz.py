"""Property-based fuzzing of scenarios x policies x APIs (fast, derandomized profile for CI).

The long profile (>= 2,000 cases) is ``python benchmarks/fuzz_long.py``; both draw their cases from
``fuzz_cases.cases`` and check them with ``fuzz_cases.check_case``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fuzz_cases import cases, check_case

FAST_EXAMPLES = 250


@settings(max_examples=FAST_EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases)
@pytest.mark.slow
def test_generated_scenarios_keep_every_property(case) -> None:
    check_case(*case)
