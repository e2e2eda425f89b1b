"""Training the three roles with a standard MARL library: Tianshou's PPO (extra ``csr-marl[train]``).

    from csr_marl.train import TrainConfig, train, load_checkpoint_policy
    run = train(TrainConfig(scenario="tasks/classify", steps=300_000, seed=0), "runs/classify")
    policy = load_checkpoint_policy(run.checkpoint)        # Decision -> action, like a built-in policy

Each role has its own actor and critic, shared by every agent of the role (see :mod:`.networks`);
rollouts come through Tianshou's ``PettingZooEnv`` and are regrouped into each agent's own decisions
before Tianshou's PPO or A2C update (see :mod:`.turns`). Three options make stronger learners
(:class:`TrainConfig`, all off by default): ``smdp_tau`` discounts by the simulated minutes between an
agent's decisions, ``central_critic`` lets the critic read ``env.state()`` (MAPPO-style), and
``init_from`` starts a role from another task's checkpoint (:mod:`.curriculum`):

    day = TrainConfig(scenario="standard_day", steps=1_000_000, central_critic=True, smdp_tau=2.0,
                      init_from={"triage": "runs/classify/checkpoint.pt"})

torch and Tianshou are imported on first use of anything but :class:`TrainConfig`; without them, the
error names the extra to install.
"""

from __future__ import annotations

from typing import Any

from .config import ALGORITHMS, TrainConfig, default_kpis
from .deps import INSTALL_HINT, TrainingUnavailable, require_training_extra

_LAZY = {
    "train": "trainer",
    "TrainingRun": "trainer",
    "load_run": "trainer",
    "load_checkpoint": "checkpoint",
    "load_checkpoint_policy": "checkpoint",
    "CheckpointPolicy": "checkpoint",
    "CheckpointError": "checkpoint",
    "evaluation_copy": "checkpoint",
    "play_episode": "evaluation",
    "play_episodes": "evaluation",
    "TianshouEnv": "tianshou_env",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'csr_marl.train' has no attribute {name!r}")
    require_training_extra()
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "ALGORITHMS",
    "INSTALL_HINT",
    "TrainConfig",
    "TrainingUnavailable",
    "default_kpis",
    "require_training_extra",
    *_LAZY,
]
