"""The default parallel env (and RLlibEnv over it) is the AEC env's contact center: over 20 seeds,
every headline KPI's mean lies inside the 99 % confidence interval of the AEC env's.

The AEC env gives the same KPIs as ``csr_marl.simulate`` (``tests/test_env_aec.py``), which is the
reference here: it is the cheaper way to play the same episodes.
"""

from __future__ import annotations

import statistics

import pytest

from extras import need

import csr_marl
from csr_marl.analysis.stats import mean_ci
from csr_marl.policies import make_policy

SEEDS = range(20)
KPIS = ("service_level_first_response", "service_level", "abandonment_rate", "resolution_rate", "sla_attainment")


def parallel_kpis(scenario: str, team: str, seed: int, rllib: bool = False) -> dict[str, float]:
    if rllib:
        from csr_marl.envs.rllib import RLlibEnv

        wrapper = RLlibEnv({"scenario": scenario})
        wrapper.reset(seed=seed)
        env, step = wrapper.par_env, wrapper.step
    else:
        env = csr_marl.parallel_env(scenario)
        env.reset(seed=seed)
        step = env.step
    policy = make_policy(team, env.scenario, env.center.streams["policy"])
    while env.agents:
        step({agent: policy(decision) for agent, decision in env.due_decisions.items()})
    result = env.center.result()
    return {**result.kpis, "team_return": result.team_return}


def assert_inside_aec_ci(scenario: str, team: str, rllib: bool = False) -> None:
    reference = [csr_marl.simulate(scenario, policy=team, seed=s) for s in SEEDS]
    runs = [parallel_kpis(scenario, team, s, rllib) for s in SEEDS]
    for kpi in (*KPIS, "team_return"):
        aec = [r.team_return if kpi == "team_return" else r.kpis[kpi] for r in reference]
        _, low, high = mean_ci(aec, 0.99)
        mean = statistics.fmean(r[kpi] for r in runs)
        assert low <= mean <= high, f"{scenario}, {team}: {kpi} {mean:.4f} outside the AEC env's 99% CI [{low:.4f}, {high:.4f}]"


@pytest.mark.slow
@pytest.mark.parametrize("team", ["heuristic", "random"])
@pytest.mark.parametrize("scenario", ["standard_day", "surge", "night_shift"])
def test_the_default_parallel_env_agrees_with_the_aec_env(scenario, team):
    assert_inside_aec_ci(scenario, team)


@pytest.mark.slow
@pytest.mark.parametrize("team", ["heuristic", "random"])
def test_rllib_env_agrees_with_the_aec_env(team):
    need("ray.rllib", "consumers")
    assert_inside_aec_ci("standard_day", team, rllib=True)
