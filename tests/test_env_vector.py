"""Vectorised rollouts in worker processes: Gymnasium's vector API, worker-count independence, masks,
shutdown and failures (csr_marl.envs.vector, csr_marl.envs.workers)."""

from __future__ import annotations

import gc
import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import csr_marl
import csr_marl.envs
from csr_marl.envs import REWARD_COMPONENTS
from csr_marl.envs.tasks import CenterTaskEnv
from csr_marl.envs.vector import ParallelVectorEnv, TaskVectorEnv
from csr_marl.envs.workers import WorkerError, split

TINY = {"horizon_minutes": 20, "warmup_minutes": 0}  # short episodes: every run crosses several autoresets
PARALLEL_TINY = {"horizon_minutes": 10, "warmup_minutes": 0}  # event-driven steps: a step per decision minute
ILLEGAL = REWARD_COMPONENTS.index("illegal_action")


def legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per mask (last axis), as a batched policy would draw."""
    return np.argmax(rng.random(masks.shape) * masks, axis=-1)


def assert_same(expected, actual, path="") -> None:
    """Equal values, dtypes and keys, down nested info dicts and object arrays (``final_obs``)."""
    if isinstance(expected, dict):
        assert set(expected) == set(actual), (path, set(expected) ^ set(actual))
        for key in expected:
            assert_same(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), path
        for index, (one, other) in enumerate(zip(expected, actual)):
            assert_same(one, other, f"{path}[{index}]")
    elif isinstance(expected, np.ndarray) and expected.dtype == object:
        assert actual.dtype == object and len(expected) == len(actual), path
        for one, other in zip(expected, actual):
            assert (one is None and other is None) or np.array_equal(one, other), path
    else:
        expected, actual = np.asarray(expected), np.asarray(actual)
        assert expected.dtype == actual.dtype, (path, expected.dtype, actual.dtype)
        assert np.array_equal(expected, actual), path


def rollout(envs, steps: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    observations, infos = envs.reset(seed=seed)
    record = [(observations, infos)]
    for _ in range(steps):
        result = envs.step(legal(rng, infos["action_mask"]))
        infos = result[4]
        record.append(result)
    return record


def test_task_vector_env_equals_gymnasiums_sync_vector_env_step_for_step():
    gym.register_envs(csr_marl.envs)
    make = [lambda: gym.make("csr_marl/Resolver-v4", overrides=TINY) for _ in range(3)]
    reference = SyncVectorEnv(make, autoreset_mode=AutoresetMode.SAME_STEP)
    expected = rollout(reference, 80, seed=5)
    reference.close()
    with TaskVectorEnv("csr_marl/Resolver-v4", num_envs=3, workers=2, overrides=TINY) as envs:
        assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        assert envs.single_observation_space == reference.single_observation_space
        assert envs.action_space == reference.action_space
        actual = rollout(envs, 80, seed=5)
        assert envs.observation_space.contains(actual[-1][0])
        np.testing.assert_array_equal(envs.action_masks(), actual[-1][4]["action_mask"].astype(bool))
    assert any(step[2].any() or step[3].any() for step in expected[1:])  # episodes ended and were reset
    assert_same(expected, actual)


def test_gymnasium_vector_wrappers_take_it():
    with TaskVectorEnv("Classify-v4", num_envs=2, workers=2, overrides=TINY) as raw:
        envs = gym.wrappers.vector.RecordEpisodeStatistics(raw)
        rng = np.random.default_rng(0)
        _, infos = envs.reset(seed=0)
        episodes = 0
        for _ in range(200):
            _, _, terminated, truncated, infos = envs.step(legal(rng, infos["action_mask"]))
            if "episode" in infos:
                episodes += int(infos["_episode"].sum())
        assert episodes > 0


@pytest.mark.parametrize("workers", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_task_trajectories_do_not_depend_on_the_number_of_workers(workers):
    with TaskVectorEnv("Resolve-v4", num_envs=3, workers=1, overrides=TINY) as envs:
        one = rollout(envs, 60, seed=11)
    with TaskVectorEnv("Resolve-v4", num_envs=3, workers=workers, overrides=TINY) as envs:
        assert_same(one, rollout(envs, 60, seed=11))


@pytest.mark.slow
def test_parallel_copies_equal_plain_parallel_envs_and_any_worker_count():
    steps, seed = 50, 3
    with ParallelVectorEnv(num_envs=3, workers=1, overrides=PARALLEL_TINY) as envs:
        one = rollout(envs, steps, seed)
        agents = envs.agents
    with ParallelVectorEnv(num_envs=3, workers=2, overrides=PARALLEL_TINY) as envs:
        assert_same(one, rollout(envs, steps, seed))
    rng = np.random.default_rng(seed)  # the actions rollout() drew, drawn again
    actions = []
    infos = one[0][1]
    for record in one[1:]:
        actions.append(legal(rng, infos["action_mask"]))
        infos = record[4]
    ends = 0
    for copy in range(3):  # copy i is parallel_env reset with seed + i, reset again (unseeded) at each end
        env = csr_marl.parallel_env(overrides=PARALLEL_TINY)
        observations, infos = env.reset(seed=seed + copy)
        np.testing.assert_array_equal(one[0][0][copy], [observations[a] for a in agents])
        for t, record in enumerate(one[1:]):
            due = [a for a in agents if infos[a]["decision_due"]]
            observations, rewards, terminations, truncations, infos = env.step(
                {a: int(actions[t][copy][agents.index(a)]) for a in due}
            )
            assert record[3][copy] == any(truncations.values()) and record[2][copy] == any(terminations.values())
            np.testing.assert_array_equal(record[1][copy], [rewards[a] for a in agents])
            if not env.agents:
                ends += 1
                np.testing.assert_array_equal(record[4]["final_obs"][copy], [observations[a] for a in agents])
                observations, infos = env.reset()
            np.testing.assert_array_equal(record[0][copy], [observations[a] for a in agents])
            for key in ("action_mask", "reward_components", "sim_time"):
                np.testing.assert_array_equal(record[4][key][copy], [infos[a][key] for a in agents])
    assert ends >= 3


def test_masks_are_the_environments_and_illegal_actions_cost_the_penalty():
    individual = {**TINY, "rewards.mode": "individual"}
    with ParallelVectorEnv(num_envs=2, workers=2, overrides=individual) as envs:
        n_actions = envs.single_action_space.n
        rng = np.random.default_rng(0)
        observations, infos = envs.reset(seed=0)
        assert observations.shape == (2, len(envs.agents), envs.single_observation_space.shape[0])
        for _ in range(30):
            masks = infos["action_mask"]
            assert masks.shape == (2, len(envs.agents), n_actions)
            # Agents with nothing to decide have exactly the no-op; those deciding never have it.
            due = infos["decision_due"]
            assert (masks[~due].sum(axis=-1) == 1).all() and masks[~due][:, -1].all()
            assert not masks[due][:, -1].any()
            _, rewards, *_, infos = envs.step(legal(rng, masks))
            assert rewards.shape == (2, len(envs.agents))
            assert not infos["reward_components"][..., ILLEGAL].any()
            assert "final_info" not in infos or not infos["final_info"]["reward_components"][..., ILLEGAL].any()
        due = infos["decision_due"]
        noop = np.full((2, len(envs.agents)), n_actions - 1)  # legal for the idle, illegal for those deciding
        _, _, _, _, after = envs.step(noop)
        components = after["reward_components"]
        if "final_info" in after:  # a copy whose episode ended: its step's components are the final info's
            components = np.where(after["_final_info"][:, None, None], after["final_info"]["reward_components"], components)
        np.testing.assert_array_equal(components[..., ILLEGAL] < 0, due)  # only agents that were asked pay


def test_misuse_is_refused_in_the_parent_and_the_workers_go_on():
    with TaskVectorEnv("Classify-v4", num_envs=2, workers=2, overrides=TINY) as envs:
        with pytest.raises(RuntimeError, match="reset"):
            envs.step(np.zeros(2, dtype=int))
        _, infos = envs.reset(seed=0)
        with pytest.raises(ValueError, match="shape"):
            envs.step(np.zeros(3, dtype=int))
        with pytest.raises(ValueError, match="integers"):
            envs.step(np.zeros(2))
        with pytest.raises(ValueError, match="lie in"):
            envs.step(np.full(2, envs.single_action_space.n))
        with pytest.raises(ValueError, match="one seed per copy"):
            envs.reset(seed=[1, 2, 3])
        envs.step(legal(np.random.default_rng(0), infos["action_mask"]))
    with pytest.raises(ValueError, match="workers"):
        TaskVectorEnv("Classify-v4", num_envs=2, workers=3)
    with pytest.raises(ValueError, match="unknown task"):
        TaskVectorEnv("Nope-v1")


@pytest.mark.slow
def test_close_reaps_every_worker():
    envs = TaskVectorEnv("Classify-v4", num_envs=4, workers=2, overrides=TINY)
    envs.reset(seed=0)
    processes = list(envs._rollout.pool.processes)
    assert all(process.is_alive() for process in processes)
    envs.close()
    assert envs.closed and all(process.exitcode == 0 for process in processes)
    envs.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        envs.reset(seed=0)
    # Dropped without close(): garbage collection reaps them too.
    envs = ParallelVectorEnv(num_envs=2, workers=2, overrides=TINY)
    processes = list(envs._rollout.pool.processes)
    del envs
    gc.collect()
    assert all(not process.is_alive() for process in processes)


def test_an_exception_in_a_copy_is_one_clear_error(monkeypatch):
    def broken(self, action):
        raise ZeroDivisionError("the copy broke")

    monkeypatch.setattr(CenterTaskEnv, "step", broken)  # the forked workers inherit it
    envs = TaskVectorEnv("Classify-v4", num_envs=4, workers=2, overrides=TINY, context="fork")
    _, infos = envs.reset(seed=0)
    processes = list(envs._rollout.pool.processes)
    expected = r"(?s)copy 0 in worker 0 \(copies 0-1\) failed during step.*ZeroDivisionError: the copy broke.*1 more worker"
    with pytest.raises(WorkerError, match=expected):
        envs.step(legal(np.random.default_rng(0), infos["action_mask"]))
    assert all(not process.is_alive() for process in processes)  # the pool is shut down
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(np.zeros(4, dtype=int))


def test_a_worker_that_dies_is_reported_not_waited_for():
    with ParallelVectorEnv(num_envs=2, workers=2, overrides=TINY) as envs:
        observations, infos = envs.reset(seed=0)
        victim = envs._rollout.pool.processes[1]
        os.kill(victim.pid, signal.SIGKILL)
        victim.join()
        with pytest.raises(WorkerError, match=r"worker 1 \(copies 1-1\) died during step \(exit code -9\)"):
            envs.step(legal(np.random.default_rng(0), infos["action_mask"]))
        assert envs.closed


def test_spawned_workers_get_the_same_results():
    with TaskVectorEnv("Classify-v4", num_envs=2, workers=1, overrides=TINY) as envs:
        forked = rollout(envs, 20)
    with TaskVectorEnv("Classify-v4", num_envs=2, workers=2, overrides=TINY, context="spawn") as envs:
        assert_same(forked, rollout(envs, 20))


def test_copies_are_split_in_even_contiguous_blocks():
    assert split(7, 3) == [range(0, 3), range(3, 5), range(5, 7)]
    assert split(4, 4) == [range(i, i + 1) for i in range(4)]
