"""Vectorised rollouts for RL collection: N copies in worker processes, several copies per worker.

Two front-ends over the same workers (:mod:`csr_marl.envs.workers`):

* :class:`TaskVectorEnv`, a Gymnasium ``VectorEnv`` over a single-agent task (``csr_marl/Resolver-v4``
  ...; :mod:`csr_marl.envs.tasks`), for anything that takes Gymnasium vector envs (CleanRL-style loops,
  ``gymnasium.wrappers.vector``);
* :class:`ParallelVectorEnv`, a batch of parallel PettingZoo environments (``csr_marl.parallel_env``)
  whose every agent's observation, mask and reward come as arrays of shape ``(num_envs, n_agents, ...)``.

    from csr_marl.envs.vector import TaskVectorEnv
    with TaskVectorEnv("Resolver-v4", num_envs=16, workers=2) as envs:
        observations, infos = envs.reset(seed=0)
        for _ in range(1000):
            masks = infos["action_mask"].astype(bool)          # (num_envs, n_actions), also envs.action_masks()
            actions = policy(observations, masks)                # (num_envs,) integers
            observations, rewards, terminated, truncated, infos = envs.step(actions)
            # a copy whose episode ended is already reset: its last observation is infos["final_obs"][i]

**Why several copies per worker.** An environment step costs 0.3-1 ms; a pipe round trip to a worker
process costs tens of microseconds plus waking the process. Vectorisers that send one message per copy
per step (SuperSuit's ``concat_vec_envs_v1``, Tianshou's ``SubprocVectorEnv``, Gymnasium's
``AsyncVectorEnv`` with one copy per worker) pay that per copy and measured *slower* with two workers
than with one on this project's 2-core machine. Here each worker holds a contiguous block of copies and
steps all of them per message; actions go in and observations, rewards, flags and infos come out
through one shared-memory buffer, so the per-step traffic is one short message each way per worker.
``benchmarks/vector_scaling.py`` measures the scaling.

**Autoreset** is Gymnasium's *same-step* mode (``metadata["autoreset_mode"]``): when a copy's episode
ends, the step returns its flags and reward, the copy is reset at once and the step's observation and
infos are the new episode's first; the ended episode's last observation and infos are in
``infos["final_obs"]`` (an object array, ``None`` for copies that did not end) and ``infos["final_info"]``,
with ``infos["_final_obs"]`` marking the copies that ended, as Gymnasium's own vector envs do. Every
action therefore goes to a live decision.

**Infos** are Gymnasium's vector dicts: ``action_mask`` (int8), ``decision_due``, ``sim_time``,
``time_since_last_decision``, ``reward_components`` (ordered as ``csr_marl.envs.REWARD_COMPONENTS``) and
``illegal_actions`` (the agent's illegal actions this episode), each batched along the copies, with ``_<key>`` (all true).

**Seeds.** ``reset(seed=s)`` resets copy ``i`` with seed ``s + i`` (Gymnasium's convention, so a run
reproduces ``gymnasium.vector.SyncVectorEnv`` over the same copies); ``reset(seed=[s0, s1, ...])`` gives
each copy its own. Later episodes of a copy draw their seeds from its own generator. A copy's
trajectory therefore depends only on its seed and its actions, never on ``workers`` or on which worker
holds it: any ``workers`` gives the same results.

**Workers and shutdown.** ``workers`` processes (at most one per core is useful) hold
``num_envs / workers`` copies each (contiguous blocks, as even as possible). ``context`` picks the
``multiprocessing`` start method (``None``: the platform's default; under ``"spawn"`` and
``"forkserver"`` the environment's arguments must pickle, which scenario names, paths and loaded
scenarios do). ``close()`` (or leaving the ``with`` block, or garbage collection, or interpreter exit)
stops and reaps every worker. An exception in a copy, or a worker that dies, raises one
:class:`~csr_marl.envs.workers.WorkerError` naming the copy, its worker and the command, with the
worker's traceback, and shuts the pool down.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..sim.rewards import COMPONENTS as REWARD_COMPONENTS
from .common import ScenarioLike
from .parallel import ContactCenterParallel
from .tasks import EMPTY_EPISODES_ALLOWED, TASKS, CenterTaskEnv
from .workers import Field, WorkerError, WorkerPool

INFO_KEYS = (
    "action_mask", "decision_due", "sim_time", "time_since_last_decision", "reward_components", "illegal_actions",
)
__all__ = ["INFO_KEYS", "ParallelVectorEnv", "TaskVectorEnv", "WorkerError"]


def copy_fields(agents: tuple[int, ...], observation: tuple[int, ...], n_actions: int) -> dict[str, Field]:
    """The shared buffer's per-copy fields; ``agents`` is ``()`` for a single-agent task, ``(n,)`` otherwise."""
    info = {
        "action_mask": Field((*agents, n_actions), np.int8),
        "decision_due": Field(agents, np.bool_),
        "sim_time": Field(agents, np.float64),
        "time_since_last_decision": Field(agents, np.float64),
        "reward_components": Field((*agents, len(REWARD_COMPONENTS)), np.float64),
        "illegal_actions": Field(agents, np.int64),
    }
    return {
        "action": Field(agents, np.int64),
        "obs": Field((*agents, *observation), np.float32),
        "reward": Field(agents, np.float64),
        "terminated": Field((), np.bool_),
        "truncated": Field((), np.bool_),
        **info,
        "final_obs": Field((*agents, *observation), np.float32),
        **{f"final_{key}": field for key, field in info.items()},
    }


class _CopyBase:
    """A copy in a worker: runs its environment and writes what it returns into its rows."""

    def _reset(self, seed: int | None) -> tuple[Any, Mapping[str, Any]]:
        raise NotImplementedError

    def _step(self, action: np.ndarray) -> tuple[Any, Any, bool, bool, Mapping[str, Any]]:
        raise NotImplementedError

    def reset(self, seed: int | None, arrays: Mapping[str, np.ndarray], index: int) -> None:
        observation, info = self._reset(seed)
        arrays["reward"][index] = 0.0
        arrays["terminated"][index] = arrays["truncated"][index] = False
        self._write(arrays, index, "", observation, info)

    def step(self, arrays: Mapping[str, np.ndarray], index: int) -> None:
        observation, reward, terminated, truncated, info = self._step(arrays["action"][index])
        arrays["reward"][index] = reward
        arrays["terminated"][index] = terminated
        arrays["truncated"][index] = truncated
        if terminated or truncated:
            self._write(arrays, index, "final_", observation, info)
            observation, info = self._reset(None)
        self._write(arrays, index, "", observation, info)

    @staticmethod
    def _write(
        arrays: Mapping[str, np.ndarray], index: int, prefix: str, observation: Any, info: Mapping[str, Any]
    ) -> None:
        arrays[prefix + "obs"][index] = observation
        for key in INFO_KEYS:
            arrays[prefix + key][index] = info[key]


class _TaskCopy(_CopyBase):
    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        self.env = CenterTaskEnv(**kwargs)

    def _reset(self, seed: int | None) -> tuple[Any, Mapping[str, Any]]:
        return self.env.reset(seed=seed)

    def _step(self, action: np.ndarray) -> tuple[Any, Any, bool, bool, Mapping[str, Any]]:
        return self.env.step(int(action))

    def close(self) -> None:
        self.env.close()


class _ParallelCopy(_CopyBase):
    """A parallel environment seen as arrays over ``possible_agents`` (all live until the episode ends)."""

    def __init__(self, scenario: ScenarioLike, options: Mapping[str, Any]) -> None:
        self.env = ContactCenterParallel(scenario, **options)
        self.agents = tuple(self.env.possible_agents)
        self.due = np.zeros(len(self.agents), dtype=bool)

    def _reset(self, seed: int | None) -> tuple[Any, Mapping[str, Any]]:
        for _ in range(EMPTY_EPISODES_ALLOWED):
            observations, infos = self.env.reset(seed=seed)
            if self.env.agents:
                return self._arrays(observations, infos)
            seed = None  # an episode with nothing to decide ended at once: the next one
        raise RuntimeError(f"{EMPTY_EPISODES_ALLOWED} episodes in a row with nothing to decide")

    def _step(self, action: np.ndarray) -> tuple[Any, Any, bool, bool, Mapping[str, Any]]:
        # Only agents whose decision is due act (the others' actions are ignored; strict mode would refuse them).
        actions = {agent: int(action[j]) for j, agent in enumerate(self.agents) if self.due[j]}
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        observation, info = self._arrays(observations, infos)
        reward = [rewards[agent] for agent in self.agents]
        return observation, reward, any(terminations.values()), any(truncations.values()), info

    def _arrays(self, observations: Mapping[str, Any], infos: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        observation = np.stack([observations[agent] for agent in self.agents])
        info = {key: np.stack([infos[agent][key] for agent in self.agents]) for key in INFO_KEYS}
        self.due = info["decision_due"]
        return observation, info

    def close(self) -> None:
        self.env.close()


class Rollout:
    """The parent's side: copies' seeds and actions in, batched results and Gymnasium-style infos out.

    Both front-ends wrap one; ``benchmarks/vector_scaling.py`` times one over copies that do nothing
    (the per-message cost of a vector step).
    """

    def __init__(
        self,
        make_copy: Any,
        num_envs: int,
        workers: int,
        fields: Mapping[str, Field],
        n_actions: int,
        context: str | None,
    ) -> None:
        self.num_envs = num_envs
        self.n_actions = n_actions
        self.pool = WorkerPool(make_copy, num_envs, workers, fields, context)
        self.arrays = self.pool.arrays
        self.stepped = False

    def reset(self, seed: int | Sequence[int] | None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = [int(s) for s in seed]
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset(seed=...) needs one seed per copy ({self.num_envs}), got {len(seeds)}")
        self.pool.run("reset", seeds)
        self.stepped = True
        return self.arrays["obs"].copy(), self._infos(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self.stepped:
            raise RuntimeError("call reset() before step()")
        target = self.arrays["action"]
        actions = np.asarray(actions)
        if actions.shape != target.shape or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be integers of shape {target.shape}, got {actions.dtype} {actions.shape}")
        if actions.size and (actions.min() < 0 or actions.max() >= self.n_actions):
            raise ValueError(f"actions must lie in 0..{self.n_actions - 1}, got {actions.min()}..{actions.max()}")
        target[...] = actions
        self.pool.run("step")
        arrays = self.arrays
        terminated, truncated = arrays["terminated"].copy(), arrays["truncated"].copy()
        infos = self._infos(terminated | truncated)
        return arrays["obs"].copy(), arrays["reward"].copy(), terminated, truncated, infos

    def _infos(self, ended: np.ndarray) -> dict[str, Any]:
        """Gymnasium's vector infos: every key batched with its ``_key`` mask, final_* for ended copies."""
        arrays = self.arrays
        every = np.ones(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for key in INFO_KEYS:
            infos[key], infos[f"_{key}"] = arrays[key].copy(), every
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_info: dict[str, Any] = {}
            for key in INFO_KEYS:
                final_info[key] = np.zeros_like(arrays[key])
                final_info[key][ended] = arrays[f"final_{key}"][ended]
                final_info[f"_{key}"] = ended
            for i in np.flatnonzero(ended):
                final_obs[i] = arrays["final_obs"][i].copy()
            infos["final_obs"], infos["_final_obs"] = final_obs, ended
            infos["final_info"], infos["_final_info"] = final_info, ended
        return infos

    def masks(self) -> np.ndarray:
        return self.arrays["action_mask"].astype(bool)


class TaskVectorEnv(VectorEnv):
    """``num_envs`` copies of a single-agent task in ``workers`` processes, as a Gymnasium ``VectorEnv``.

    ``task``: a task of :data:`csr_marl.envs.TASKS` (``"Resolver-v4"`` or ``"csr_marl/Resolver-v4"``);
    ``options`` go to :class:`~csr_marl.envs.tasks.CenterTaskEnv` over the task's own (``scenario``,
    ``agent``, ``colleagues``, ``overrides``, ``strict``). See the module docstring.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        task: str = "Resolver-v4",
        num_envs: int = 8,
        workers: int = 2,
        *,
        context: str | None = None,
        **options: Any,
    ) -> None:
        name = task.removeprefix("csr_marl/")
        if name not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose one of {sorted(TASKS)}")
        kwargs = {**TASKS[name], **options}
        probe = CenterTaskEnv(**kwargs)  # the spaces, and argument errors raised here rather than in a worker
        probe.close()
        self.task = name
        self.num_envs = num_envs
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.observation_space = batch_space(probe.observation_space, num_envs)
        self.action_space = batch_space(probe.action_space, num_envs)
        n_actions = int(probe.action_space.n)
        fields = copy_fields((), probe.observation_space.shape, n_actions)
        self._rollout = Rollout(functools.partial(_TaskCopy, kwargs), num_envs, workers, fields, n_actions, context)
        self.workers = workers

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (copy ``i`` with seed ``seed + i``); ``options`` are not used."""
        super().reset(seed=seed if isinstance(seed, (int, np.integer)) else None)
        return self._rollout.reset(seed)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision of every copy's learner: ``actions`` has shape ``(num_envs,)``."""
        return self._rollout.step(actions)

    def action_masks(self) -> np.ndarray:
        """Legal actions now, ``(num_envs, n_actions)`` booleans (as sb3-contrib's ``MaskablePPO`` reads them)."""
        return self._rollout.masks()

    def close_extras(self, **kwargs: Any) -> None:
        rollout = getattr(self, "_rollout", None)
        if rollout is not None:
            rollout.pool.close()

    def __enter__(self) -> TaskVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TaskVectorEnv(csr_marl/{self.task}, num_envs={self.num_envs}, workers={self.workers})"


class ParallelVectorEnv:
    """``num_envs`` parallel environments (``csr_marl.parallel_env``) in ``workers`` processes, as arrays.

    Every array has the copies first, then the agents in :attr:`agents` order (``possible_agents``; the
    agent list never changes during an episode and every agent's episode ends together):

    * ``reset(seed=None) -> (observations, infos)``; ``observations``: ``(num_envs, n_agents, obs_dim)``
      float32; infos as the module docstring, each ``(num_envs, n_agents, ...)`` (the ``_key`` masks
      and ``final_*`` along the copies);
    * ``step(actions) -> (observations, rewards, terminated, truncated, infos)``; ``actions``:
      ``(num_envs, n_agents)`` integers (agents with nothing to decide are not asked: theirs are
      ignored, so any value does, e.g. the no-op ``n_actions - 1``); ``rewards``: ``(num_envs, n_agents)``;
      ``terminated``, ``truncated``: ``(num_envs,)``;
    * ``action_masks() -> (num_envs, n_agents, n_actions)`` booleans.

    ``options`` go to :class:`~csr_marl.envs.parallel.ContactCenterParallel` (``overrides``,
    ``strict``, ``decision_interval_minutes``, ``max_cycles``, ...); observations must be flat and spaces
    uniform (the defaults).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        scenario: ScenarioLike = "standard_day",
        num_envs: int = 8,
        workers: int = 2,
        *,
        context: str | None = None,
        **options: Any,
    ) -> None:
        if options.get("flat_observations", True) is False or options.get("uniform_spaces", True) is False:
            raise ValueError("ParallelVectorEnv batches flat observations over uniform spaces: leave both options at True")
        probe = ContactCenterParallel(scenario, **options)
        self.agents = tuple(probe.possible_agents)
        self.single_observation_space = probe.observation_space(self.agents[0])
        self.single_action_space: gymnasium.spaces.Discrete = probe.action_space(self.agents[0])
        probe.close()
        self.num_envs = num_envs
        self.workers = workers
        n_actions = int(self.single_action_space.n)
        fields = copy_fields((len(self.agents),), self.single_observation_space.shape, n_actions)
        make_copy = functools.partial(_ParallelCopy, scenario, options)
        self._rollout = Rollout(make_copy, num_envs, workers, fields, n_actions, context)

    def reset(self, seed: int | Sequence[int] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (copy ``i`` with seed ``seed + i``)."""
        return self._rollout.reset(seed)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One parallel step of every copy."""
        return self._rollout.step(actions)

    def action_masks(self) -> np.ndarray:
        return self._rollout.masks()

    @property
    def closed(self) -> bool:
        return self._rollout.pool.closed

    def close(self) -> None:
        self._rollout.pool.close()

    def __enter__(self) -> ParallelVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParallelVectorEnv(num_envs={self.num_envs}, workers={self.workers}, agents={len(self.agents)})"
