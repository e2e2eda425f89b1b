"""``train``: PPO (or A2C) from Tianshou on the contact center, on CPU, with a learning curve.

How the pieces fit, CleanRL-style from top to bottom:

1. ``envs`` copies of :class:`.tianshou_env.TianshouEnv` (Tianshou's ``PettingZooEnv`` over
   ``csr_marl.env()``, ``credit="step"``: every agent's reward of each turn, for :mod:`.turns`), in a
   ``DummyVectorEnv``; each step is one AEC turn (the agent whose decision is due).
2. Actor and critic: one MLP per role (:mod:`.networks`), the mask applied to the logits; the critic
   also reads ``env.state()`` with ``central_critic``; roles named in ``init_from`` start from
   another run's checkpoint (:mod:`.curriculum`).
3. Tianshou's on-policy trainer collects ``episodes_per_update`` whole episodes, then the algorithm
   regroups them into each agent's own decisions (:mod:`.turns`; with ``smdp_tau``, discounted by the
   simulated time between them) and runs its usual update.
4. After each of ``eval_points`` epochs: a greedy evaluation on fixed seeds (team return and two KPIs,
   scored by the core as ``simulate`` scores the baselines), a checkpoint, a row of the curve.

Output folder: ``checkpoint.pt`` (the latest), ``curve.csv``, ``curve.png``, ``run.json``.
"""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..config.scenario import Scenario
from ..policies import RandomPolicy
from ..simulation import simulate
from ..whatif.store import write_json
from .config import TrainConfig, default_kpis
from .deps import require_training_extra

EVAL_SEED_BASE = 10_000  # learning-curve episode e runs with seed 10_000 + e (never a training seed)
REFERENCE_POLICIES = ("random", "heuristic")


@dataclass
class TrainingRun:
    """What :func:`train` leaves behind."""

    out_dir: Path
    checkpoint: Path
    curve: list[dict[str, float]]
    kpis: tuple[str, str]
    references: dict[str, dict[str, float]]
    cpu_seconds: float
    summary: dict[str, Any] = field(default_factory=dict)


def train(
    config: TrainConfig,
    out_dir: str | Path,
    *,
    progress: Callable[[dict[str, float]], None] | None = None,
    plot: bool = True,
) -> TrainingRun:
    """Train the scenario's roles; write checkpoint, curve and summary into ``out_dir``.

    ``progress`` receives every learning-curve row as it is measured.
    """
    require_training_extra()
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    numpy_state, python_state = np.random.get_state(), random.getstate()
    # Tianshou warns on every rollout that the returns are per agent (we report the team's ourselves).
    stats_log = logging.getLogger("tianshou.data.stats")
    level = stats_log.level
    stats_log.setLevel(logging.ERROR)
    try:
        return _train(config, Path(out_dir), progress, plot)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        stats_log.setLevel(level)


def _train(
    config: TrainConfig, out: Path, progress: Callable[[dict[str, float]], None] | None, plot: bool
) -> TrainingRun:
    import torch
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams

    from .checkpoint import Checkpoint, CheckpointPolicy, layout_signature, save_checkpoint
    from .curves import plot_curve, write_curve
    from .evaluation import play_episodes
    from .tianshou_env import TianshouEnv

    for role, path in config.init_from.items():
        if not Path(path).is_file():
            raise FileNotFoundError(f"init_from[{role}]: no checkpoint file at {path}")
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    torch.manual_seed(config.seed)
    # Tianshou draws minibatch orders from numpy's (and Python's) global generators: unseeded, the
    # same --seed gave another curve on every run. They are seeded here, and restored by train().
    np.random.seed(config.seed % 2**32)
    random.seed(config.seed)
    scenario = config.training_scenario()
    eval_scenario = config.evaluation_scenario()  # scored as the baselines are: the team return
    kpis = config.kpis or default_kpis(eval_scenario)
    eval_seeds = [EVAL_SEED_BASE + e for e in range(config.eval_episodes)]
    references = {
        name: _means([simulate(eval_scenario, name, seed) for seed in eval_seeds], kpis) for name in REFERENCE_POLICIES
    }

    envs = [  # regrouped by .turns
        TianshouEnv(scenario, credit="step", with_state=config.central_critic, with_time=config.smdp_tau is not None)
        for _ in range(config.envs)
    ]
    venv = DummyVectorEnv([partial(_same, env) for env in envs])
    venv.seed([int(s) for s in np.random.SeedSequence(config.seed).generate_state(config.envs)])
    steps_done = StepCounter()
    algorithm, layout = _algorithm(config, envs[0], steps_done)
    out.mkdir(parents=True, exist_ok=True)  # after init_from's checkpoints were read and checked
    actor, critic = algorithm.policy.actor, algorithm.critic
    per_env = (math.ceil(config.rollout_episodes / config.envs) + 1) * _episode_length_bound(scenario)
    collector = Collector(algorithm, venv, VectorReplayBuffer(config.envs * per_env, config.envs))
    trainer = algorithm.create_trainer(
        OnPolicyTrainerParams(
            training_collector=collector,
            max_epochs=config.eval_points,
            epoch_num_steps=math.ceil(config.steps / config.eval_points),
            collection_step_num_env_steps=None,
            collection_step_num_episodes=config.rollout_episodes,
            update_step_num_repetitions=config.repeat,
            batch_size=config.batch_size,
            test_collector=None,
            training_fn=steps_done,
            show_progress=False,
            verbose=False,
        )
    )
    trainer.reset()
    checkpoint_path = out / "checkpoint.pt"
    rows: list[dict[str, float]] = []
    seen = [0] * len(envs)
    for _ in range(config.eval_points):
        epoch = trainer.execute_epoch()
        env_steps = int(epoch.info_stat.train_step)
        finished = [r for i, env in enumerate(envs) for r in env.finished[seen[i]:]]
        seen = [len(env.finished) for env in envs]
        save_checkpoint(
            checkpoint_path, config=config, layout=layout, actor=actor, critic=critic, optimizer=algorithm.optim,
            progress={"env_steps": env_steps, "cpu_seconds": time.process_time() - cpu_start},
        )
        checkpoint = Checkpoint(checkpoint_path, config, layout_signature(layout), actor, critic, None, {})
        actor.eval()
        greedy = _means(play_episodes(eval_scenario, CheckpointPolicy(checkpoint, eval_scenario), eval_seeds), kpis)
        actor.train()
        row = {
            "env_steps": env_steps,
            "episodes": sum(seen),
            "cpu_seconds": time.process_time() - cpu_start,
            "wall_seconds": time.perf_counter() - wall_start,
            "train_return": _means(finished, kpis)["team_return"],
            "eval_return": greedy["team_return"],
            **{f"eval_{kpi}": greedy[kpi] for kpi in kpis},
            **_losses(epoch.training_stat),
        }
        rows.append(row)
        write_curve(rows, kpis, out / "curve.csv")
        if progress is not None:
            progress(row)
    if plot:
        plot_curve(rows, kpis, out / "curve.png", references=references, title=_title(config))
    cpu_seconds = time.process_time() - cpu_start
    summary = {
        "config": config.model_dump(mode="json"),
        "kpis": list(kpis),
        "eval_seeds": eval_seeds,
        "references": references,
        "final": rows[-1],
        "cpu_seconds": cpu_seconds,
        "wall_seconds": time.perf_counter() - wall_start,
        "torch": torch.__version__,
        **({"warm_start": steps_done.warm_start} if steps_done.warm_start else {}),
    }
    write_json(out / "run.json", summary)
    return TrainingRun(out, checkpoint_path, rows, kpis, references, cpu_seconds, summary)


def load_run(out_dir: str | Path) -> TrainingRun:
    """The :class:`TrainingRun` that :func:`train` left in ``out_dir`` (its ``run.json``, ``curve.csv`` and
    ``checkpoint.pt``), to score or compare a finished run without training it again. Raises
    FileNotFoundError naming the missing file when the run did not finish."""
    import json

    from .curves import read_curve

    out = Path(out_dir)
    for name in ("run.json", "curve.csv", "checkpoint.pt"):
        if not (out / name).is_file():
            raise FileNotFoundError(f"{out / name}: no finished training run in {out}")
    summary = json.loads((out / "run.json").read_text())
    return TrainingRun(out, out / "checkpoint.pt", read_curve(out / "curve.csv"), tuple(summary["kpis"]),
                       summary["references"], summary["cpu_seconds"], summary)


class StepCounter:
    """Tianshou's ``training_fn``: remembers the env steps done before each rollout."""

    def __init__(self) -> None:
        self.value = 0
        self.warm_start: dict[str, Any] | None = None  # what the warm start did, if there was one

    def __call__(self, epoch: int, env_step: int) -> None:
        self.value = env_step


def _algorithm(config: TrainConfig, env: Any, steps_done: StepCounter) -> tuple[Any, Any]:
    """Actor, critic and Tianshou's PPO / A2C over per-agent turns; also the observation layout."""
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory

    from .checkpoint import build_networks, layout_signature, observation_layout
    from .curriculum import init_role
    from .schedule import LinearDecay, RoleRates
    from .turns import TurnsA2C, TurnsPPO

    layout = observation_layout(env.env.unwrapped.scenario)
    state_size = len(layout.state_names) if config.central_critic else 0
    actor, critic = build_networks(layout_signature(layout), int(env.action_space.n), config.hidden, state_size)
    for role, path in config.init_from.items():
        init_role(role, path, actor, critic, layout)
    if config.warm_start is not None:
        from .warm_start import warm_start

        steps_done.warm_start = warm_start(
            actor, env.env.unwrapped.scenario, config.warm_start, config.warm_start_episodes,
            config.warm_start_epochs, config.seed, roles=config.warm_start_roles,
        )
    for role in config.freeze_roles:
        if role in actor.roles:  # no gradient reaches it, so no update moves it
            actor.roles[role].requires_grad_(False)
    policy = DiscreteActorPolicy(
        actor=actor, action_space=env.action_space, observation_space=env.observation_space, deterministic_eval=True
    )
    optimizer = (
        RoleRates(config.lr, actor.roles, config.role_lr) if config.role_lr else AdamOptimizerFactory(lr=config.lr)
    )
    if config.lr_decay:
        optimizer = optimizer.with_lr_scheduler_factory(LinearDecay(config.steps, lambda: steps_done.value))
    extra = {"eps_clip": config.eps_clip} if config.algo == "ppo" else {}
    algorithm = {"ppo": TurnsPPO, "a2c": TurnsA2C}[config.algo](
        agent_columns=dict(env.agent_idx),
        smdp_tau=config.smdp_tau,
        policy=policy,
        critic=critic,
        optim=optimizer,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        return_scaling=config.return_scaling,
        **extra,
    )
    return algorithm, layout


def _same(env: Any) -> Any:
    return env


def _episode_length_bound(scenario: Scenario) -> int:
    """Room for one episode's decisions: four times a random team's, which wastes the most steps."""
    decisions = 0

    def count(decision: Any) -> int:
        nonlocal decisions
        decisions += 1
        return random(decision)

    random = RandomPolicy(scenario, np.random.default_rng(0))
    simulate(scenario, count, seed=0)
    return 4 * decisions + 256


def _means(results: list[Any], kpis: tuple[str, str] | list[str]) -> dict[str, float]:
    def mean(values: list[float]) -> float:
        finite = [v for v in values if not math.isnan(v)]
        return float(np.mean(finite)) if finite else math.nan

    out = {"team_return": mean([r.team_return for r in results])}
    out.update({kpi: mean([r.kpis.get(kpi, math.nan) for r in results]) for kpi in kpis})
    return out


def _losses(stats: Any) -> dict[str, float]:
    out = {}
    for column, attribute in (("loss", "loss"), ("actor_loss", "actor_loss"), ("vf_loss", "vf_loss"), ("entropy", "ent_loss")):
        value = getattr(stats, attribute, None)
        out[column] = float(getattr(value, "mean", math.nan)) if value is not None else math.nan
    return out


def _title(config: TrainConfig) -> str:
    return f"{config.scenario} · {config.algo} · {config.steps:,} steps · seed {config.seed}"
