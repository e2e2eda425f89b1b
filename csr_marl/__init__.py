"""csr_marl: a customer-service contact center as a multi-agent RL environment and a staffing tool.

    import csr_marl
    scn = csr_marl.load_scenario("standard_day", overrides={"staffing.resolver": 5})
    res = csr_marl.simulate(scn, policy="heuristic", seed=0)
    print(res.kpis["service_level"])

The PettingZoo factories ``env``, ``raw_env`` and ``parallel_env``, the language interface's
``text_env`` (text observations, JSON tool calls as actions) and ``TextSession``, and the
trained-policy loader ``load_checkpoint_policy`` (the ``train`` extra) are imported on first use, so
``import csr_marl`` stays light. ``load_scenario``, ``simulate``, ``scenario_names`` and ``ScenarioError``
are imported on first use too, so that ``csr-marl --help`` and ``csr-marl --version`` load no numpy,
pydantic or SimPy.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_ENV_NAMES = ("env", "raw_env", "parallel_env")
_TEXT_NAMES = ("text_env", "TextSession")
_CONFIG_NAMES = ("ScenarioError", "load_scenario", "scenario_names")


def __getattr__(name: str) -> Any:
    if name in _CONFIG_NAMES:
        from . import config

        return getattr(config, name)
    if name == "simulate":
        from .simulation import simulate

        return simulate
    if name in _ENV_NAMES:
        from . import envs

        return getattr(envs, name)
    if name in _TEXT_NAMES:
        from . import text

        return getattr(text, name)
    if name == "load_checkpoint_policy":
        from .train import load_checkpoint_policy

        return load_checkpoint_policy
    raise AttributeError(f"module 'csr_marl' has no attribute {name!r}")


__all__ = [*_CONFIG_NAMES, "load_checkpoint_policy", "simulate", *_ENV_NAMES, *_TEXT_NAMES]
