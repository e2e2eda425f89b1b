"""RLlib (new API stack) as its PettingZoo docs use it: one PPO iteration on each environment."""

from __future__ import annotations

import math

import pytest

from extras import need

import csr_marl

# RLlib takes seconds to import: where a test uses it, not when the file is collected (the fast suite
# skips most of these tests, and each of its processes collects every file). With -n, one process runs
# them all: one import, one local Ray.
pytestmark = pytest.mark.xdist_group("rllib")
SHORT = {"overrides": {"horizon_minutes": 60}}


def rllib_env(config: dict):
    """``csr_marl.envs.rllib.RLlibEnv(config)``, or a skip naming the extra."""
    need("ray.rllib", "consumers")
    from csr_marl.envs.rllib import RLlibEnv

    return RLlibEnv(config)


@pytest.fixture(scope="module")
def local_ray():
    ray = need("ray", "consumers")
    need("ray.rllib", "consumers")
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
    from ray.tune.registry import register_env

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    register_env("csr_marl_parallel", lambda config: ParallelPettingZooEnv(csr_marl.parallel_env(**SHORT)))
    register_env("csr_marl_aec", lambda config: PettingZooEnv(csr_marl.env(**SHORT)))
    register_env("csr_marl_deciding", lambda config: rllib_env({**SHORT, **config}))
    yield
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ["csr_marl_parallel", "csr_marl_aec", "csr_marl_deciding"])
def test_one_ppo_iteration(local_ray, env_name):
    from ray.rllib.algorithms.ppo import PPOConfig

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


def test_rllib_env_observes_only_deciding_agents_and_keeps_every_reward():
    import numpy as np

    deciding, plain = rllib_env(SHORT), csr_marl.parallel_env(**SHORT)
    observations, infos = deciding.reset(seed=5)
    plain_obs, plain_infos = plain.reset(seed=5)
    rng = np.random.default_rng(5)
    totals = dict.fromkeys(plain.possible_agents, 0.0)
    plain_totals = dict.fromkeys(plain.possible_agents, 0.0)
    samples = steps = 0
    while True:
        assert set(observations) == set(deciding.par_env.due_decisions) and observations
        assert all(info["decision_due"] for info in infos.values())
        actions = {a: int(rng.choice(np.flatnonzero(info["action_mask"]))) for a, info in infos.items()}
        samples, steps = samples + len(actions), steps + 1
        observations, rewards, terminated, truncated, infos = deciding.step(actions)
        plain_obs, plain_rewards, _, _, plain_infos = plain.step(actions)  # waiting agents left out: the same step
        for agent, observation in observations.items():  # what RLlib gets is the parallel env's, bit for bit
            assert np.array_equal(observation, plain_obs[agent])
            assert infos[agent].keys() == plain_infos[agent].keys()
            assert all(np.array_equal(infos[agent][k], plain_infos[agent][k]) for k in infos[agent])
        for agent in plain.possible_agents:
            totals[agent] += rewards.get(agent, 0.0)
            plain_totals[agent] += plain_rewards.get(agent, 0.0)
        if terminated["__all__"] or truncated["__all__"]:
            break
    assert set(observations) == set(plain.possible_agents)  # every trajectory closes
    assert totals == plain_totals  # same dynamics, every reward delivered
    assert samples / steps < 0.5 * len(plain.possible_agents)  # no forced no-ops: only real decisions


@pytest.mark.slow
def test_with_rllib_s_action_masking_module_no_action_is_illegal(local_ray):
    # RLlib's default PPO module ignores masks; its action-masking module reads them from the
    # observation, which RLlibEnv provides with mask_in_observation=True.
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    register_env("csr_marl_masked", lambda config: rllib_env({**SHORT, "mask_in_observation": True}))
    config = (
        PPOConfig()
        .environment("csr_marl_masked")
        .multi_agent(policies={"staff"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "staff")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "staff": RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config={"head_fcnet_hiddens": [32]})
        }))
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        algo.train()
        env = rllib_env({**SHORT, "mask_in_observation": True})
        module = algo.get_module("staff")
        observations, _ = env.reset(seed=1)
        import torch

        while observations:
            actions = {}
            for agent, observation in observations.items():
                batch = {"obs": {k: torch.as_tensor(v)[None] for k, v in observation.items()}}
                logits = module.forward_inference(batch)["action_dist_inputs"][0]
                actions[agent] = int(torch.argmax(logits))
            observations, _, terminated, truncated, _ = env.step(actions)
            if terminated["__all__"] or truncated["__all__"]:
                break
        assert env.center.result().kpis["illegal_actions"] == 0
    finally:
        algo.stop()


def test_the_mask_in_the_observation_is_the_info_s():
    import numpy as np

    env = rllib_env({**SHORT, "mask_in_observation": True})
    observations, infos = env.reset(seed=2)
    for agent, observation in observations.items():
        assert env.observation_spaces[agent].contains(observation)
        np.testing.assert_array_equal(observation["action_mask"], infos[agent]["action_mask"])
