from __future__ import annotations

import os

# One compute thread per test process (torch, BLAS), set before either is imported; the processes the
# tests start inherit it. With -n 2 on two cores, a torch that takes both cores in each worker (its
# default) makes their small layers wait on each other: SB3's PPO through SuperSuit ran 5x slower so.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import csr_marl  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full", action="store_true", default=False,
        help="also run the tests marked slow (statistical validation, long documentation examples): what CI runs",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The fast run draws fewer fuzz examples (the full run, what CI runs, draws the module's default)."""
    if not config.getoption("--full"):
        os.environ.setdefault("CSR_MARL_TOOL_FUZZ_EXAMPLES", "300")


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
