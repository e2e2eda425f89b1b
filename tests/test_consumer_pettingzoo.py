"""PettingZoo's own test suite, run as its docs say, on the default constructors.

``pettingzoo.test`` samples actions without masks where the environment gives none in the observation
(``parallel_api_test``, ``max_cycles_test``, ``state_test``): the defaults must take that (an illegal
action costs a penalty and is replaced by a random legal action; it never raises).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    render_test,
    seed_test,
    state_test,
)

import csr_marl
import csr_marl.envs
from extras import need
from csr_marl.envs.driver import IllegalActionWarning


def test_api_test():
    api_test(csr_marl.env(), num_cycles=1000)


def test_parallel_api_test():
    # PettingZoo's test samples actions without the masks: the environment says so, per agent.
    with pytest.warns(IllegalActionWarning):
        parallel_api_test(csr_marl.parallel_env(), num_cycles=1000)


def test_seed_test():
    seed_test(csr_marl.env, num_cycles=500)


def test_parallel_seed_test():
    parallel_seed_test(csr_marl.parallel_env, num_cycles=500)


def test_state_test():
    state_test(csr_marl.env(), csr_marl.parallel_env(), num_cycles=100)


def test_max_cycles_test():
    max_cycles_test(csr_marl.envs)  # a module with env() and parallel_env(), as PettingZoo's own


def test_render_test(capsys):
    render_test(lambda render_mode=None: csr_marl.env(render_mode=render_mode))
    assert "decision due" in capsys.readouterr().out  # "human" printed the floor


@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_registered_with_pettingzoo_s_registry(kind):
    import pettingzoo

    env = pettingzoo.make(kind, "csr_marl/ContactCenter-v5", overrides={"horizon_minutes": 60})
    assert isinstance(env.unwrapped, csr_marl.envs.ContactCenterAEC if kind == "aec" else csr_marl.envs.ContactCenterParallel)
    env.reset(seed=0)
    assert env.unwrapped.scenario.name == "standard_day" and env.agents



@pytest.mark.slow
def test_a_vector_env_a_learner_holds_closes_quietly_at_exit():
    # SB3's model holds SuperSuit's vector env, whose __del__ closes the environments while the
    # interpreter exits, after module globals may have been cleared. Judging the episode then must not
    # raise ("Exception ignored in ..."): the compiled driver once read a cleared threshold there.
    need("supersuit")
    need("stable_baselines3")
    script = (
        "import warnings, supersuit as ss, csr_marl\n"
        "from stable_baselines3 import PPO\n"
        "venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(csr_marl.parallel_env()), 1, num_cpus=0,"
        " base_class='stable_baselines3')\n"
        "warnings.simplefilter('ignore')\n"
        "model = PPO('MlpPolicy', venv, n_steps=64, batch_size=64, verbose=0).learn(64)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
