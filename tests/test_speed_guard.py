"""The speed guard's verdict (``benchmarks/core_throughput.py --quick``), with the rates stubbed: what
it decides from the ratios is tested here; the timings themselves never are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import core_throughput  # noqa: E402


def no_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    # fresh_heap collects garbage before each timed run: a full pass over a test process's heap (with
    # torch and ray imported, a gigabyte) took seconds each, and the verdict does not depend on it.
    monkeypatch.setattr(core_throughput, "fresh_heap", lambda run: run())


def stub_rates(monkeypatch: pytest.MonkeyPatch, mmc: float, standard_day: float) -> None:
    no_collection(monkeypatch)
    monkeypatch.setattr(core_throughput, "bare_simpy", lambda n: 100.0)
    monkeypatch.setattr(core_throughput, "ciw_reference", lambda n: 50.0)
    monkeypatch.setattr(core_throughput, "csr_marl_run",
                        lambda scenario, n, seed=0: mmc if scenario == "mmc" else standard_day)


def test_the_guard_passes_when_every_ratio_meets_its_floor(monkeypatch, capsys):
    stub_rates(monkeypatch, mmc=60.0, standard_day=10.0)  # 1.2x ciw, 0.6x SimPy, 0.1x SimPy
    assert core_throughput.quick(rounds=3, n_tickets=8) == 0
    assert "MISSED" not in capsys.readouterr().out


def test_the_guard_fails_when_one_ratio_misses(monkeypatch, capsys):
    stub_rates(monkeypatch, mmc=45.0, standard_day=10.0)  # 0.9x ciw
    assert core_throughput.quick(rounds=3, n_tickets=8) == 1
    out = capsys.readouterr().out
    assert "simulate mmc / ciw        = 0.900x" in out and "MISSED" in out


def test_standard_day_is_held_to_its_speed_up_over_the_before_commit(monkeypatch, capsys):
    # 0.1x bare SimPy meets the stand-in floor (1.5 x 0.063x) but is only 1.25x the before-commit's 0.08x
    stub_rates(monkeypatch, mmc=60.0, standard_day=10.0)
    assert core_throughput.quick(rounds=3, n_tickets=8, before=lambda n, seed: 8.0) == 1
    out = capsys.readouterr().out
    assert "1.5 x 0.080x (4da2260 in this run; this code 1.25x it): MISSED" in out
    assert core_throughput.quick(rounds=3, n_tickets=8, before=lambda n, seed: 6.0) == 0  # 1.67x it


def test_standard_day_plays_new_shifts_every_round_the_same_for_both_codes(monkeypatch):
    """Content caches make replayed shifts read faster than new ones: every timed round plays new seeds,
    and the before-commit plays this round's seeds, not another round's."""
    played: list[tuple[str, int, int]] = []

    def this_code(scenario: str, n: int, seed: int = 0) -> float:
        if scenario == "standard_day":
            played.append(("this code", n, seed))
        return 10.0

    no_collection(monkeypatch)
    monkeypatch.setattr(core_throughput, "bare_simpy", lambda n: 100.0)
    monkeypatch.setattr(core_throughput, "ciw_reference", lambda n: 50.0)
    monkeypatch.setattr(core_throughput, "csr_marl_run", this_code)
    core_throughput.quick(rounds=3, n_tickets=80_000, before=lambda n, seed: played.append(("before", n, seed)) or 8.0)
    pre_run, timed = played[:2], played[2:]
    assert pre_run[0][1:] == pre_run[1][1:]
    assert [who for who, _, _ in timed] == ["this code", "before"] * 3
    seeds = [seed for _, _, seed in timed]
    assert seeds[0::2] == seeds[1::2]  # each round: the same shifts for both codes
    assert len(set(seeds[0::2])) == 3 and pre_run[0][2] not in seeds  # new shifts every round
    tickets = 80_000 // 8
    starts = sorted(seeds[0::2])
    # a round's seeds run ahead of the next round's by more than one per 100 tickets (a shift has hundreds)
    assert all(later - earlier > tickets // 100 for earlier, later in zip(starts, starts[1:]))


def test_the_before_commit_runs_from_the_repositorys_history():
    """The child imports csr_marl from the commit's own tree (not this checkout, which an editable
    install also puts on the path) and answers with a rate."""
    try:
        before = core_throughput.BeforeCode(core_throughput.BEFORE_COMMIT)
    except RuntimeError as error:  # a checkout without the history (a shallow clone)
        pytest.skip(str(error))
    tree = Path(before.tree)
    try:
        assert Path(before.ready()).resolve() == (tree / "csr_marl" / "__init__.py").resolve()
        assert before(200, 3) > 0
    finally:
        before.close()
    assert not tree.exists()
