from __future__ import annotations

import pytest

import csr_marl


@pytest.fixture(scope="session")
def standard_day():
    return csr_marl.load_scenario("standard_day")
