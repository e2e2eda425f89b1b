"""``csr-marl train`` and ``csr-marl evaluate``: learn the roles with Tianshou's PPO, score a checkpoint.

``evaluate`` scores a trained team exactly as ``csr-marl baseline`` scores the built-in policies:
episode e runs with ``SeedSequence(seed, spawn_key=(e,))`` and the core's team return and KPIs, so the
three rows of its table are the same customers under three policies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer
from pydantic import ValidationError

from ..config.loading import load_scenario
from ..config.scenario import Scenario
from ..sim.decisions import Decision
from ..simulation import simulate
from ..train import TrainConfig, TrainingUnavailable, require_training_extra
from ..whatif import BaselineRow, run_baselines, write_baseline_report
from ..whatif.records import metric_names, replication_record
from ..whatif.replications import replication_seed
from ..whatif.summary import estimates
from .common import UsageError, check_output_folder, console, escape, fail, friendly_errors, note, parse_key_values, parse_sets, print_estimates, with_overrides
from .sweep import SETS, invocation

TRAINED = "trained"
CHECKPOINT_PREFIX = "checkpoint:"
REFERENCE_POLICIES = ("random", "heuristic")


def _require_extra() -> None:
    try:
        require_training_extra()
    except TrainingUnavailable as exc:
        fail(str(exc))


def checkpoint_path(policy: str) -> Path | None:
    """The PATH of a ``--policy checkpoint:PATH`` (which must exist), or None for a built-in name."""
    if not policy.startswith(CHECKPOINT_PREFIX):
        return None
    path = Path(policy.removeprefix(CHECKPOINT_PREFIX))
    if not path.is_file():
        raise UsageError(f"--policy {policy}: no checkpoint file at {path} (give checkpoint:DIR/checkpoint.pt)")
    _require_extra()
    return path


def policy_from_option(policy: str, scenario: Any) -> Any:
    """``--policy`` of ``simulate``: a built-in name as it is, or ``checkpoint:PATH`` as a trained policy
    (``simulate`` binds it to the episode's core)."""
    path = checkpoint_path(policy)
    if path is None:
        return policy
    from ..train import load_checkpoint_policy

    return load_checkpoint_policy(path, scenario)


def parse_hyperparameters(items: list[str] | None) -> dict[str, Any]:
    """``["lr=3e-4", "envs=8"]`` -> TrainConfig fields (values parsed as YAML)."""
    return parse_key_values(items, "--hp", "lr=3e-4")


def parse_init_from(items: list[str] | None) -> dict[str, str]:
    """``["triage=runs/classify/checkpoint.pt"]`` -> ``{"triage": "runs/classify/checkpoint.pt"}``."""
    pairs = {}
    for item in items or ():
        role, sep, path = item.partition("=")
        if not sep or not role.strip() or not path.strip():
            raise UsageError(f"--init-from {item!r}: expected ROLE=CHECKPOINT, e.g. triage=runs/classify/checkpoint.pt")
        pairs[role.strip()] = path.strip()
    return pairs


def train_config(**fields: Any) -> TrainConfig:
    """A :class:`TrainConfig`, with a one-line error naming the bad field."""
    try:
        return TrainConfig(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise UsageError(f"{where}: {first['msg']}") from None


@friendly_errors
def train_command(
    ctx: typer.Context,
    scenario: str = typer.Argument(..., help="Scenario name (e.g. tasks/classify) or YAML path."),
    algo: str = typer.Option("ppo", "--algo", "-a", help="ppo or a2c (Tianshou's)."),
    steps: int = typer.Option(
        300_000, "--steps", "-n",
        help="Environment steps (AEC turns, one decision each). Training collects whole episodes, so each "
        "of the --eval-points epochs runs at least steps/eval-points and is rounded up to its last rollout; "
        "the steps actually run are printed and kept in run.json.",
    ),
    seed: int = typer.Option(0, "--seed", "-s", help="Seeds the training environments and the networks."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder \\[default: runs/train/<scenario>_<algo>_s<seed>]."),
    sets: Optional[list[str]] = SETS,
    reward_mode: Optional[str] = typer.Option(
        None, "--reward-mode", help="Training reward: shared, individual or mixed (evaluation always reports the team return)."
    ),
    split_team_costs: bool = typer.Option(
        False, "--split-team-costs", help="Training reward: each agent bears 1/N of waiting and abandonment (use with --reward-mode individual)."
    ),
    eval_points: int = typer.Option(10, "--eval-points", help="Learning-curve points; a checkpoint at each."),
    eval_episodes: int = typer.Option(3, "--eval-episodes", help="Greedy evaluation episodes per point."),
    smdp_tau: Optional[float] = typer.Option(
        None, "--smdp-tau", help="Semi-MDP discounting: gamma per this many simulated minutes between an agent's decisions."
    ),
    central_critic: bool = typer.Option(
        False, "--central-critic", help="The critic also reads env.state() at each decision (MAPPO-style); the actor does not."
    ),
    init_from: Optional[list[str]] = typer.Option(
        None, "--init-from",
        help="Curriculum ROLE=CHECKPOINT: the role starts from that run's actor and critic (matched by feature name); repeatable.",
    ),
    hyperparameters: Optional[list[str]] = typer.Option(
        None, "--hp", help="Other TrainConfig field KEY=VALUE, e.g. lr=3e-4, gamma=0.9, envs=8; repeatable."
    ),
) -> None:
    """Train every role of a scenario on CPU; write checkpoint.pt, curve.csv, curve.png and run.json."""
    _require_extra()
    from ..train import train

    options = dict(
        scenario=scenario, algo=algo, steps=steps, seed=seed, overrides=parse_sets(sets), reward_mode=reward_mode,
        split_team_costs=split_team_costs, eval_points=eval_points, eval_episodes=eval_episodes,
        smdp_tau=smdp_tau, central_critic=central_critic, init_from=parse_init_from(init_from),
    )
    extra = parse_hyperparameters(hyperparameters)
    for key in extra.keys() & options.keys():
        raise UsageError(f"--hp {key}: use the --{key.replace('_', '-')} option")
    config = train_config(**options, **extra)
    config.training_scenario()  # a bad scenario name or override fails here, at once
    for role, path in config.init_from.items():
        if not Path(path).is_file():
            raise UsageError(f"--init-from {role}={path}: no checkpoint file there")
    folder = check_output_folder(out or Path("runs/train") / f"{Path(scenario).stem}_{algo}_s{seed}", "--out")
    console.print(f"[bold]{escape(invocation(ctx))}[/] → {escape(str(folder))}", highlight=False)

    def report(row: dict[str, float]) -> None:
        kpis = "  ".join(f"{k.removeprefix('eval_')} {v:.3f}" for k, v in row.items() if k.startswith("eval_") and k != "eval_return")
        console.print(
            f"step {int(row['env_steps']):>9,}/{steps:,}  cpu {row['cpu_seconds']:6.0f}s  "
            f"return {row['eval_return']:8.2f} (training {row['train_return']:8.2f})  {kpis}  loss {row['loss']:.4f}",
            highlight=False,
        )

    run = train(config, folder, progress=report)
    ran = int(run.curve[-1]["env_steps"])
    if ran != steps:
        console.print(
            f"[dim]ran {ran:,} environment steps for --steps {steps:,}: each epoch ends with its last whole "
            f"rollout ({config.rollout_episodes} episodes)[/]", highlight=False,
        )
    refs = "  ".join(f"{name} {values['team_return']:.2f}" for name, values in run.references.items())
    console.print(f"[dim]same seeds: {escape(refs)}; wrote {escape(str(run.checkpoint))}, curve.csv, curve.png, run.json[/]", highlight=False, soft_wrap=True)


def evaluate_trained(
    checkpoint: str | Path,
    scenario: str | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    episodes: int = 20,
    seed: int = 0,
    greedy: bool = True,
) -> BaselineRow:
    """Team return and KPIs of a checkpoint, mean and 95% CI, on the baselines' seeds.

    ``scenario`` defaults to the training one (with its training overrides); ``overrides`` go on top.
    """
    from ..train import load_checkpoint_policy

    name, overrides = scenario_to_play(checkpoint, scenario, overrides)
    scn = load_scenario(name, overrides)
    policy = load_checkpoint_policy(checkpoint, scn, greedy=greedy)
    return score_policy(name, scn, policy, TRAINED if greedy else f"{TRAINED}_sampled", episodes=episodes, seed=seed)


def score_policy(
    name: str, scenario: Scenario, policy: Callable[[Decision], int] | str, label: str, *, episodes: int, seed: int
) -> BaselineRow:
    """Any policy (a trained one, a mixed team, a built-in by name) scored as the baselines are: episode e with
    ``SeedSequence(seed, spawn_key=(e,))``, the core's team return, the manager's score and KPIs, mean and 95% CI."""
    records = [
        replication_record(simulate(scenario, policy, replication_seed(seed, e)), scenario.manager)
        for e in range(episodes)
    ]
    return BaselineRow(name, label, episodes, estimates(records, metric_names()))


def scenario_to_play(
    checkpoint: str | Path, scenario: str | None, overrides: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """The scenario name and overrides to evaluate on: the training ones unless a scenario is given."""
    if scenario is not None:
        return scenario, dict(overrides or {})
    from ..train import load_checkpoint

    trained_on = load_checkpoint(checkpoint).config
    return trained_on.scenario, {**trained_on.overrides, **(overrides or {})}


@friendly_errors
def evaluate_command(
    ctx: typer.Context,
    checkpoint: Path = typer.Argument(..., help="A checkpoint.pt written by csr-marl train."),
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Scenario to play \\[default: the training one]."),
    episodes: int = typer.Option(20, "--episodes", "-n", min=1, help="Episodes (the baselines' seeds)."),
    seed: int = typer.Option(0, "--seed", "-s", help="Base seed; episode e uses SeedSequence(seed, spawn_key=(e,))."),
    sets: Optional[list[str]] = SETS,
    greedy: bool = typer.Option(True, "--greedy/--sample", help="Most probable action, or sample the policy (core's policy stream)."),
    compare: bool = typer.Option(True, "--compare/--no-compare", help="Also run the random and heuristic baselines."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write <policy>_baseline.md/.json/.csv here."),
) -> None:
    """Score a trained team as `csr-marl baseline` scores the built-in policies (same seeds, same KPIs)."""
    _require_extra()
    if out is not None:
        check_output_folder(out, "--out")
    name, overrides = scenario_to_play(checkpoint, scenario, parse_sets(sets))
    note(f"evaluate: {episodes} episodes of {name} with the trained team")
    rows = [evaluate_trained(checkpoint, name, overrides, episodes=episodes, seed=seed, greedy=greedy)]
    for policy in REFERENCE_POLICIES if compare else ():
        note(f"evaluate: the same {episodes} episodes with the {policy} team")
        rows.append(run_baselines([name], policy, episodes=episodes, seed=seed, overrides=overrides)[0])
    title = with_overrides(f"{name} · {episodes} episodes · mean ± 95% CI half-width", overrides)
    print_estimates(title, "policy", rows, lambda row: row.policy)
    if out is not None:
        paths = [p for row in rows for p in write_baseline_report([row], out, seed=seed, command=invocation(ctx))]
        console.print(f"[dim]wrote {escape(', '.join(str(p) for p in paths))}[/]", highlight=False, soft_wrap=True)
