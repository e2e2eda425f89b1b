"""``csr-marl baseline``: team return and headline KPIs of a built-in policy, mean and 95% CI per scenario."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from ..whatif import run_baselines, write_baseline_report
from ..whatif.baselines import BASELINE_SPLITS, resolve_scenarios
from ..whatif.errors import StudyError
from ..whatif.executors import executor_scope
from .common import check_output_folder, console, escape, friendly_errors, parse_sets, print_estimates, progress_bar, with_overrides
from .sweep import BACKEND, RAY_ADDRESS, SEED, SETS, WORKERS, check_backend, invocation
from .train import checkpoint_path, evaluate_trained


@friendly_errors
def baseline_command(
    ctx: typer.Context,
    policy: str = typer.Option(
        "random", "--policy", "-p",
        help="Built-in policy (random, heuristic, heuristic_full, fifo, escalate_all, declared_labels, text_classifier, text_classifier_overflow) or checkpoint:PATH (a trained team).",
    ),
    scenario: Optional[str] = typer.Option(
        None, "--scenario",
        help="Scenario name, comma list, or all \\[default: all; for a checkpoint, the scenario it was trained on].",
    ),
    episodes: int = typer.Option(20, "--episodes", "-n", help="Episodes per scenario."),
    split: str = typer.Option(
        "all", "--split",
        help="Tickets from which side of the bank's held-out split (tickets.split): all (each scenario as "
        "written), train, test (held-out), or both: a train and a held-out row side by side for each "
        "scenario whose bank holds tickets out, one 'all' row for the others.",
    ),
    out: Path = typer.Option(Path("runs/baselines"), "--out", "-o", help="Folder for <policy>_baseline.md/.json/.csv."),
    sets: Optional[list[str]] = SETS,
    seed: Optional[int] = SEED,
    workers: Optional[int] = WORKERS,
    backend: str = BACKEND,
    ray_address: Optional[str] = RAY_ADDRESS,
) -> None:
    """Run a built-in or trained policy for several episodes per scenario; print and write the table.

    Episode e runs with SeedSequence(seed, spawn_key=(e,)) under every policy: rows saw the same customers.
    With --split both, a scenario's train and held-out rows also share those seeds (the same arrivals).
    """
    checkpoint, overrides = checkpoint_path(policy), parse_sets(sets)
    if split not in BASELINE_SPLITS:
        raise StudyError(f"--split must be one of {', '.join(BASELINE_SPLITS)}, got {split!r}")
    if checkpoint is not None and split == "both":
        raise StudyError("--split both is for built-in policies; evaluate a checkpoint with --split train, then test")
    check_output_folder(out, "--out")  # before running every episode, not after
    if checkpoint is not None:
        if split != "all":
            overrides = {**overrides, "tickets.split": split}
        names = [None] if scenario is None else resolve_scenarios(scenario)
        rows = [
            replace(evaluate_trained(checkpoint, name, overrides, episodes=episodes, seed=seed or 0), split=split)
            for name in names
        ]
        policy = rows[0].policy
    else:
        with executor_scope(None, workers, check_backend(backend), ray_address) as pool, progress_bar(f"baseline {policy}") as bar:
            rows = run_baselines(
                scenario or "all", policy, episodes=episodes, seed=seed or 0, overrides=overrides,
                executor=pool, progress=bar, split=split,
            )
    title = with_overrides(f"policy={policy} · {episodes} episodes · mean ± 95% CI half-width", parse_sets(sets))
    print_estimates(title, "scenario", rows, lambda row: row.label)
    paths = write_baseline_report(rows, out, seed=seed or 0, command=invocation(ctx))
    console.print(f"[dim]wrote {escape(', '.join(str(p) for p in paths))}[/]", highlight=False, soft_wrap=True)
