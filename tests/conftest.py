from __future__ import annotations

import pytest
from hypothesis import settings

import csr_marl


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full", action="store_true", default=False,
        help="also run the tests marked slow (statistical validation, long documentation examples): what CI runs",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default run is fast: tests marked slow skip unless --full is given (or -m selects them)."""
    if config.getoption("--full") or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with --full (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def standard_day():
    return csr_marl.load_scenario("standard_day")


# Property tests draw the same examples on every run and machine: CI never depends on luck.
settings.register_profile("deterministic", derandomize=True, print_blob=True)
settings.load_profile("deterministic")
