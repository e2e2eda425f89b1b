from __future__ import annotations

import pytest
from hypothesis import settings

import csr_marl


@pytest.fixture(scope="session")
def standard_day():
    return csr_marl.load_scenario("standard_day")


# Property tests draw the same examples on every run and machine: CI never depends on luck.
settings.register_profile("deterministic", derandomize=True, print_blob=True)
settings.load_profile("deterministic")
