"""RLlib (new API stack) as its PettingZoo docs use it: one PPO iteration on each environment."""

from __future__ import annotations

import math

import pytest

import csr_marl

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

SHORT = {"overrides": {"horizon_minutes": 60}}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    register_env("csr_marl_parallel", lambda config: ParallelPettingZooEnv(csr_marl.parallel_env(**SHORT)))
    register_env("csr_marl_aec", lambda config: PettingZooEnv(csr_marl.env(**SHORT)))
    yield
    ray.shutdown()


@pytest.mark.parametrize("env_name", ["csr_marl_parallel", "csr_marl_aec"])
def test_one_ppo_iteration(local_ray, env_name):
    config = (
        PPOConfig()
        .environment(env_name)
        .multi_agent(policies={"staff"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "staff")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=512, minibatch_size=128, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled"] >= 512
    assert math.isfinite(runners["episode_return_mean"])  # whole 60-minute episodes were played
    assert "staff" in result["learners"]
