"""Sweeps: files written, common random numbers, independent replications, resume, refusals."""

from __future__ import annotations

import csv
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from csr_marl.whatif import (
    InlineExecutor,
    StudyError,
    load_sweep_definition,
    parse_target,
    parse_targets,
    replication_seed,
    run_sweep,
    sweep_study,
)

SHORT = {"horizon_minutes": 120, "warmup_minutes": 0}


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("whatif_sweep")


def small_study(**changes):
    options = {"replications": 3, "overrides": SHORT, **changes}
    return sweep_study("mmc", ["staffing.resolver=4..5"], **options)


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("sweep") / "out"
    seen: list[tuple[int, int]] = []
    outcome = run_sweep(
        small_study(), folder, executor=InlineExecutor(), progress=lambda done, total: seen.append((done, total)),
        plot_kpi="p_wait", targets=[parse_target("p_wait<=0.5")], command="csr-marl sweep mmc ...",
    )
    return outcome, folder, seen


def test_sweep_writes_every_file(finished) -> None:
    outcome, folder, seen = finished
    names = {p.name for p in folder.iterdir()}
    assert names == {"config.yaml", "replications.csv", "summary.csv", "manifest.json", "p_wait.png",
                     "interval_replications.csv", "intervals.csv"}
    assert (folder / "p_wait.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert seen[0] == (0, 6) and seen[-1] == (6, 6)
    assert outcome.ran == 6 and outcome.reused == 0


def test_manifest_records_versions_seeds_hash_and_command(finished) -> None:
    outcome, folder, _ = finished
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["config_hash"] == outcome.study.config_hash
    assert manifest["command"] == "csr-marl sweep mmc ..."
    assert manifest["seeds"]["base_seed"] == 0 and "SeedSequence" in manifest["seeds"]["scheme"]
    assert {"python", "numpy", "simpy", "csr-marl"} <= set(manifest["versions"])
    assert manifest["vary"] == {"staffing.resolver": [4, 5]} and manifest["grid_points"] == 2


def test_summary_has_mean_and_ci_per_kpi_per_point(finished) -> None:
    outcome, folder, _ = finished
    rows = read_rows(folder / "summary.csv")
    p_wait = {row["staffing.resolver"]: row for row in rows if row["kpi"] == "p_wait"}
    assert set(p_wait) == {"4", "5"}
    for row in p_wait.values():
        assert float(row["ci_low"]) <= float(row["mean"]) <= float(row["ci_high"]) and row["n"] == "3"
    assert float(p_wait["5"]["mean"]) < float(p_wait["4"]["mean"])  # one more resolver, fewer waits
    assert outcome.points[1].estimates["p_wait"].mean == pytest.approx(float(p_wait["5"]["mean"]))


def test_intervals_have_a_ci_per_point_and_interval(finished) -> None:
    outcome, folder, _ = finished
    rows = read_rows(folder / "intervals.csv")
    level = [row for row in rows if row["kpi"] == "service_level"]
    width = outcome.study.scenario.service_level.interval_minutes
    assert {row["interval"] for row in level} == {str(k) for k in range(len({r["start_minute"] for r in level}))}
    assert all(float(row["start_minute"]) == int(row["interval"]) * width for row in level)
    for row in level:
        if row["mean"] != "nan":
            assert 0 <= float(row["ci_low"]) <= float(row["mean"]) <= float(row["ci_high"]) <= 1 and row["n"] == "3"
    heads = {(row["staffing.resolver"], float(row["mean"])) for row in rows if row["kpi"] == "headcount_resolver"}
    assert heads == {("4", 4.0), ("5", 5.0)}


def test_common_random_numbers_across_points_independent_replications(finished) -> None:
    _, folder, _ = finished
    rows = read_rows(folder / "replications.csv")
    offered = {(row["staffing.resolver"], row["replication"]): row["offered"] for row in rows}
    for r in ("0", "1", "2"):
        assert offered[("4", r)] == offered[("5", r)]  # the same customers at every staffing level
    assert len({offered[("4", r)] for r in ("0", "1", "2")}) == 3


def test_replication_seed_is_the_spawned_child() -> None:
    child = np.random.SeedSequence(7).spawn(4)[3]
    assert replication_seed(7, 3).generate_state(4).tolist() == child.generate_state(4).tolist()


def test_results_do_not_depend_on_workers(finished, tmp_path: Path) -> None:
    _, folder, _ = finished
    with ProcessPoolExecutor(max_workers=2) as pool:
        run_sweep(small_study(), tmp_path / "pool", executor=pool, plot_kpi=None)
    for name in ("replications.csv", "summary.csv", "intervals.csv"):
        assert (tmp_path / "pool" / name).read_bytes() == (folder / name).read_bytes()


def test_resume_keeps_what_is_done_and_repairs_a_cut_line(finished, tmp_path: Path) -> None:
    _, folder, _ = finished
    out = tmp_path / "resumed"
    run_sweep(small_study(replications=2), out, executor=InlineExecutor(), plot_kpi=None)
    log = out / "replications.csv"
    log.write_text(log.read_text() + "1,5,2,12.5,3")  # a kill in the middle of a line
    outcome = run_sweep(small_study(), out, executor=InlineExecutor(), plot_kpi=None)
    assert (outcome.reused, outcome.ran) == (4, 2)
    for name in ("replications.csv", "summary.csv", "intervals.csv"):
        assert (out / name).read_bytes() == (folder / name).read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert [run["ran"] for run in manifest["runs"]] == [4, 2]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"policy": "random"}, "policy: heuristic there, random here"),
        ({"seed": 5}, "seed: 0 there, 5 here"),
        ({"overrides": {**SHORT, "arrivals.rate_per_hour": 100}}, "scenario differs in arrivals"),
    ],
)
def test_a_folder_holding_another_study_is_refused(finished, change: dict, reason: str) -> None:
    _, folder, _ = finished
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    with pytest.raises(StudyError) as info:
        run_sweep(small_study(**change), folder, executor=InlineExecutor())
    assert f"{folder} holds another study ({reason}" in str(info.value)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before


def test_a_folder_with_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StudyError, match="is not empty and holds no manifest.json"):
        run_sweep(small_study(), tmp_path, executor=InlineExecutor())
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_bad_study_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="unknown policy 'psychic'"):
        small_study(policy="psychic")
    with pytest.raises(StudyError, match="--replications must be at least 1"):
        small_study(replications=0)
    with pytest.raises(StudyError, match="--kpi: unknown KPI 'sevice_level' \\(did you mean service_level\\?\\)"):
        run_sweep(small_study(), tmp_path / "out", executor=InlineExecutor(), plot_kpi="sevice_level")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("preset", sorted((Path(__file__).resolve().parents[1] / "configs" / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_sweep_presets_are_valid(preset: Path) -> None:
    definition = load_sweep_definition(preset)
    study = sweep_study(definition.scenario, definition.axes(), replications=definition.replications or 30, overrides=definition.set)
    assert len(study.scenarios) >= 2
    parse_targets(definition.targets)
