"""Learning works (issue 5): Tianshou's PPO trains the roles on `classify`, `resolve` and `standard_day`.

Three seeds per task, each run within its CPU budget (10 minutes on the tasks, 30 on the full day),
two runs at a time. Every trained team is then scored exactly as the baselines are -- 20 episodes,
episode e with SeedSequence(0, spawn_key=(e,)), the core's team return and KPIs -- beside the random
and heuristic baselines on the same customers. Regenerates

    benchmarks/results/learning.md      the table, the targets, what the misses mean
    benchmarks/results/learning.json    every number in it
    benchmarks/results/learning_<task>.png   learning curves (three seeds) with the baselines

and keeps the runs (checkpoints, curves) under runs/learning/:

    python benchmarks/learning.py                       # everything: about 75 minutes on two cores
    python benchmarks/learning.py --tasks classify --seeds 0 --workers 1
    python benchmarks/learning.py --report-only         # rebuild the page from runs/learning/

Targets: on classify the trained triage reaches >= 90% of the heuristic's team return; on resolve
>= 80%; on standard_day the trained team closes >= 50% of the gap between random and heuristic.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


from csr_marl.analysis import mean_ci
from csr_marl.cli.train import evaluate_trained
from csr_marl.train import TrainConfig
from csr_marl.whatif import run_baselines
from csr_marl.whatif.provenance import machine, now, versions
from csr_marl.whatif.records import natural_range

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = Path("runs/learning")
EPISODES = 20  # evaluation episodes per trained team and per baseline
SEEDS = (0, 1, 2)

# One entry per task: the training run (hyperparameters chosen for the task, as a researcher would),
# the CPU budget it must fit, and the target.
TASKS: dict[str, dict] = {
    "classify": {
        "config": dict(
            scenario="tasks/classify", steps=400_000, gamma=0.5, gae_lambda=0.9, episodes_per_update=16,
            eval_points=10,
        ),
        "budget_minutes": 10,
        "target": ("share_of_heuristic", 0.9),
        "kpis": ("triage_accuracy", "triage_priority_accuracy"),
    },
    "resolve": {
        "config": dict(scenario="tasks/resolve", steps=300_000, episodes_per_update=32, eval_points=10),
        "budget_minutes": 10,
        "target": ("share_of_heuristic", 0.8),
        "kpis": ("resolution_rate", "first_contact_resolution"),
    },
    "standard_day": {
        "config": dict(
            scenario="standard_day", steps=1_000_000, reward_mode="individual", split_team_costs=True,
            episodes_per_update=4, eval_points=12,
        ),
        "budget_minutes": 30,
        "target": ("gap_closed", 0.5),
        "kpis": ("resolution_rate", "abandonment_rate"),
    },
}

# What a missed target most likely means, and the fix (shown only for a task that misses).
WHY_MISSED: dict[str, str] = {}


def run_one(task: str, seed: int) -> dict:
    """Train one seed of a task, then score its checkpoint on the baselines' seeds (runs in a worker)."""
    from csr_marl.train import train

    out = RUNS / f"{task}_s{seed}"
    config = TrainConfig(**TASKS[task]["config"], seed=seed)
    run = train(config, out)
    row = evaluate_trained(run.checkpoint, episodes=EPISODES)
    evaluation = {k: e._asdict() for k, e in row.estimates.items()}
    record = {"task": task, "seed": seed, "cpu_seconds": run.cpu_seconds, "curve": run.curve, "evaluation": evaluation}
    (out / "evaluation.json").write_text(json.dumps(record, default=_nan_to_none))
    return record


def baselines(task: str) -> dict[str, dict]:
    """The random and heuristic baselines on the task's scenario, seeds and episodes."""
    config = TASKS[task]["config"]
    rows = {
        policy: run_baselines([config["scenario"]], policy, episodes=EPISODES, seed=0, overrides=config.get("overrides"), workers=1)[0]
        for policy in ("random", "heuristic")
    }
    return {policy: {k: e._asdict() for k, e in row.estimates.items()} for policy, row in rows.items()}


def target_check(task: str, trained: float, random: float, heuristic: float) -> dict:
    kind, threshold = TASKS[task]["target"]
    if kind == "share_of_heuristic":
        value = trained / heuristic
        wording = f"trained / heuristic team return = {value:.1%} (target >= {threshold:.0%})"
    else:
        value = (trained - random) / (heuristic - random)
        wording = f"gap closed = (trained - random) / (heuristic - random) = {value:.1%} (target >= {threshold:.0%})"
    return {"kind": kind, "value": value, "threshold": threshold, "met": value >= threshold, "wording": wording}


def summarise(task: str, records: list[dict], reference: dict[str, dict]) -> dict:
    kpis = TASKS[task]["kpis"]
    trained = {}
    for metric in ("team_return", *kpis):
        per_seed = [r["evaluation"][metric]["mean"] for r in records]
        mean, low, high = mean_ci(per_seed) if len(per_seed) > 1 else (per_seed[0], math.nan, math.nan)
        lowest, highest = natural_range(metric)
        low, high = max(low, lowest), min(high, highest)
        trained[metric] = {"mean": mean, "low": low, "high": high, "per_seed": per_seed}
    check = target_check(
        task, trained["team_return"]["mean"], reference["random"]["team_return"]["mean"],
        reference["heuristic"]["team_return"]["mean"],
    )
    cpu = [r["cpu_seconds"] / 60 for r in records]
    return {"trained": trained, "baselines": reference, "target": check, "cpu_minutes": cpu, "kpis": list(kpis)}


def plot(task: str, records: list[dict], reference: dict[str, dict], path: Path) -> None:
    from csr_marl.train.curves import pyplot

    plt = pyplot()
    kpis = TASKS[task]["kpis"]
    panels = [("team_return", "eval_return"), *((k, f"eval_{k}") for k in kpis)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), dpi=110)
    for ax, (metric, column) in zip(axes, panels):
        for r in sorted(records, key=lambda r: r["seed"]):
            ax.plot([p["env_steps"] for p in r["curve"]], [p[column] for p in r["curve"]], marker="o", ms=2.5, lw=1.2, label=f"PPO seed {r['seed']}")
        for i, policy in enumerate(("random", "heuristic")):
            ax.axhline(reference[policy][metric]["mean"], ls="--", lw=1, color=f"C{i + 5}", label=policy)
        ax.set_title(metric)
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{TASKS[task]['config']['scenario']}: greedy evaluation during training (3 episodes per point); baselines over {EPISODES} episodes", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def markdown(summaries: dict[str, dict], seeds: list[int], command: str) -> str:
    info = machine()
    lines = [
        "# Learning: Tianshou PPO against the random and heuristic baselines",
        "",
        f"Generated {now()} by `{command}` on {info['platform']}, {info['cpu_count']} CPUs; "
        + ", ".join(f"{k} {v}" for k, v in versions().items()) + ".",
        "",
        f"Each task is trained with {len(seeds)} seeds ({', '.join(map(str, seeds))}); each trained team is then evaluated greedily on {EPISODES} "
        "episodes with the baselines' seeds (episode e: `SeedSequence(0, spawn_key=(e,))`), so every row below "
        "saw the same customers. Team return is the sum of all reward components over the episode "
        "(`SimulationResult.team_return`), whatever reward the agents trained on. Trained: mean over seeds "
        "[95% CI over seeds, Student t]; baselines: mean [95% CI over episodes].",
        "",
    ]
    for task, s in summaries.items():
        kpis = s["kpis"]
        config = TASKS[task]["config"]
        lines += [f"## {task}", "", f"Training: `{_config_line(config)}`.", ""]
        lines += ["| policy | " + " | ".join(("team_return", *kpis)) + " |", "|---|" + "---:|" * (1 + len(kpis))]
        lines.append("| PPO (trained) | " + " | ".join(_ci(s["trained"][m]) for m in ("team_return", *kpis)) + " |")
        for policy in ("random", "heuristic"):
            lines.append(f"| {policy} | " + " | ".join(_ci(s["baselines"][policy][m]) for m in ("team_return", *kpis)) + " |")
        per_seed = ", ".join(f"{v:.2f}" for v in s["trained"]["team_return"]["per_seed"])
        cpu = s["cpu_minutes"]
        verdict = "**met**" if s["target"]["met"] else "**missed**"
        lines += [
            "",
            f"- Target: {s['target']['wording']}: {verdict}"
            + ("" if s["target"]["met"] else f", short by {100 * (s['target']['threshold'] - s['target']['value']):.1f} percentage points"),
            f"- Team return per seed: {per_seed}.",
            f"- CPU minutes per run (training and its curve evaluations): {', '.join(f'{c:.1f}' for c in cpu)} "
            f"(budget {TASKS[task]['budget_minutes']}).",
            "",
            f"![{task} learning curves](learning_{task}.png)",
            "",
        ]
        if not s["target"]["met"] and task in WHY_MISSED:
            lines += [WHY_MISSED[task], ""]
    return "\n".join(lines)


def _config_line(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def _ci(stat: dict) -> str:
    mean, low, high = stat["mean"], stat["low"], stat["high"]
    if low is None or high is None or math.isnan(low):
        return f"{mean:.3f}"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def _nan_to_none(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--workers", type=int, default=2, help="runs trained side by side (one CPU each)")
    parser.add_argument("--report-only", action="store_true", help="rebuild the page from runs/learning/")
    args = parser.parse_args()

    started = time.perf_counter()
    jobs = [(task, seed) for task in args.tasks for seed in args.seeds]
    if args.report_only:
        records = [json.loads((RUNS / f"{t}_s{s}" / "evaluation.json").read_text()) for t, s in jobs]
    else:
        # Longest first, so the two workers finish together.
        jobs.sort(key=lambda job: -TASKS[job[0]]["budget_minutes"])
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            futures = [pool.submit(run_one, task, seed) for task, seed in jobs]
            records = []
            for future in futures:
                record = future.result()
                records.append(record)
                print(f"{record['task']} seed {record['seed']}: team return {record['evaluation']['team_return']['mean']:.2f} "
                      f"in {record['cpu_seconds'] / 60:.1f} CPU minutes", flush=True)
    RESULTS.mkdir(exist_ok=True)
    summaries = {}
    for task in args.tasks:
        mine = [r for r in records if r["task"] == task]
        reference = baselines(task)
        summaries[task] = summarise(task, mine, reference)
        plot(task, mine, reference, RESULTS / f"learning_{task}.png")
    command = "python benchmarks/learning.py" + ("" if args.tasks == list(TASKS) else " --tasks " + " ".join(args.tasks))
    (RESULTS / "learning.md").write_text(markdown(summaries, args.seeds, command))
    (RESULTS / "learning.json").write_text(json.dumps({"generated_at": now(), "machine": machine(), "versions": versions(), "tasks": summaries}, indent=2, default=_nan_to_none))
    print(f"wrote {RESULTS / 'learning.md'} in {(time.perf_counter() - started) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
