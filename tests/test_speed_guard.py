"""The speed guard's verdict (``benchmarks/core_throughput.py --quick``), with the rates stubbed: what
it decides from the ratios is tested here; the timings themselves never are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import core_throughput  # noqa: E402


def stub_rates(monkeypatch: pytest.MonkeyPatch, mmc: float, standard_day: float) -> None:
    monkeypatch.setattr(core_throughput, "bare_simpy", lambda n: 100.0)
    monkeypatch.setattr(core_throughput, "ciw_reference", lambda n: 50.0)
    monkeypatch.setattr(core_throughput, "csr_marl_run",
                        lambda scenario, n: mmc if scenario == "mmc" else standard_day)


def test_the_guard_passes_when_every_ratio_meets_its_floor(monkeypatch, capsys):
    stub_rates(monkeypatch, mmc=60.0, standard_day=10.0)  # 1.2x ciw, 0.6x SimPy, 0.1x SimPy
    assert core_throughput.quick(rounds=3, n_tickets=8) == 0
    assert "MISSED" not in capsys.readouterr().out


def test_the_guard_fails_when_one_ratio_misses(monkeypatch, capsys):
    stub_rates(monkeypatch, mmc=45.0, standard_day=10.0)  # 0.9x ciw
    assert core_throughput.quick(rounds=3, n_tickets=8) == 1
    out = capsys.readouterr().out
    assert "simulate mmc / ciw        = 0.900x" in out and "MISSED" in out
