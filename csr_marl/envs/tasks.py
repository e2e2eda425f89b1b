"""Single-agent Gymnasium tasks: one staff member learns, built-in policies run everyone else.

    import gymnasium as gym
    import csr_marl.envs  # registers the tasks (gym.register_envs(csr_marl.envs) keeps the import)
    env = gym.make("csr_marl/Resolve-v4")

| id | scenario | the learner | colleagues |
|---|---|---|---|
| ``csr_marl/Classify-v4`` | ``tasks/classify`` | ``triage_0`` (alone) | -- |
| ``csr_marl/Resolve-v4`` | ``tasks/resolve`` | ``resolver_0`` (alone) | -- |
| ``csr_marl/Triage-v4`` | ``standard_day`` | ``triage_0`` | heuristic |
| ``csr_marl/Resolver-v4`` | ``standard_day`` | ``resolver_0`` | heuristic |
| ``csr_marl/EscalationDesk-v4`` | ``standard_day`` | ``escalation_0`` | heuristic |

A step is one decision of the learner; between two of them the core runs and the colleagues' built-in
policy answers theirs. The observation is the learner's role vector (``Box``, as in the multi-agent
environment with ``uniform_spaces=False``; ``feature_names()`` names it), the action the role's
``Discrete`` space (its last index, the no-op, is never legal here). The mask is
``info["action_mask"]`` and :meth:`CenterTaskEnv.action_masks` (sb3-contrib's ``MaskablePPO``). The
reward is what the learner earned since its previous decision under the scenario's reward mode (in
``shared`` mode, the team's reward). An illegal action costs ``rewards.illegal_action`` and is
replaced by a uniformly random legal action, as in the multi-agent environment (``strict=True``
raises); ``info["illegal_actions"]`` counts the learner's, and a high share of the learner's own
decisions warns, at every episode's end (a reset, ``TimeLimit``'s truncation included). The episode ends at
the horizon (truncated) or when a ``max_tickets`` scenario closed every ticket (terminated).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np

from ..policies.base import make_policy
from .common import METADATA, ScenarioLike, as_action, resolve_scenario
from .driver import CenterDriver, agent_names
from .render import floor_text

TASKS: dict[str, dict[str, str]] = {
    "Classify-v4": {"scenario": "tasks/classify", "agent": "triage_0"},
    "Resolve-v4": {"scenario": "tasks/resolve", "agent": "resolver_0"},
    "Triage-v4": {"scenario": "standard_day", "agent": "triage_0"},
    "Resolver-v4": {"scenario": "standard_day", "agent": "resolver_0"},
    "EscalationDesk-v4": {"scenario": "standard_day", "agent": "escalation_0"},
}
EMPTY_EPISODES_ALLOWED = 100


class CenterTaskEnv(gymnasium.Env):
    """One staff member of the contact center as a Gymnasium environment (see the module docstring)."""

    metadata = {"render_modes": METADATA["render_modes"], "render_fps": METADATA["render_fps"]}

    def __init__(
        self,
        scenario: ScenarioLike = "tasks/resolve",
        agent: str = "resolver_0",
        colleagues: str = "heuristic",
        render_mode: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        strict: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in METADATA["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; choose one of {METADATA['render_modes']} or None")
        self.render_mode = render_mode
        self.scenario = resolve_scenario(scenario, overrides)
        floor = agent_names(self.scenario)
        if agent not in floor:
            raise ValueError(f"agent {agent!r} is not on scenario {self.scenario.name!r}'s floor: {floor}")
        # Only the learner is judged for illegal actions: its colleagues are built-in policies.
        self._driver = CenterDriver(self.scenario, uniform_spaces=False, strict=strict, learners=(agent,))
        make_policy(colleagues, self.scenario, np.random.default_rng(0))  # an unknown name fails here
        self.agent = agent
        self.colleagues = colleagues
        role = self._driver.role_of[agent]
        self.observation_space = self._driver.layout.observation_space(role, flat=True)
        self.action_space = self._driver.layout.action_space(role)
        self._policy: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        driver = self._driver
        for _ in range(EMPTY_EPISODES_ALLOWED):
            driver.start(seed if seed is not None else int(self.np_random.integers(2**63)))
            assert driver.center is not None
            self._policy = make_policy(self.colleagues, self.scenario, driver.center.streams["policy"])
            bind = getattr(self._policy, "bind", None)
            if bind is not None:  # a colleague that reads the running core (e.g. text_classifier_overflow)
                bind(driver.center)
            self._colleagues_act()
            if driver.decision is not None:
                driver.account.restart(self.agent)  # its return starts at its first decision (reset() has no reward)
                return self._observation(), self._info()
            seed = None  # an episode in which the learner never decides teaches nothing
        raise RuntimeError(f"{EMPTY_EPISODES_ALLOWED} episodes in a row in which {self.agent} never decided")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        driver = self._driver
        if driver.decision is None:
            raise RuntimeError("the episode has ended: call reset()")
        driver.act(as_action(self.agent, action))  # the learner's reward since its turn starts from zero
        self._colleagues_act()
        reward = driver.account.since_turn(self.agent)  # earned until its next decision (or the end)
        ended = driver.decision is None
        if self.render_mode == "human":
            self.render()
        return self._observation(), float(reward), ended and driver.ended_early, ended and not driver.ended_early, self._info()

    def close(self) -> None:
        """End the episode in progress (as a reset would) and close."""
        self._driver.end_episode()
        super().close()

    def action_masks(self) -> np.ndarray:
        """Legal actions now, as booleans (sb3-contrib's ``MaskablePPO`` reads this)."""
        return self._driver.mask(self.agent, False).astype(bool)

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        driver = self._driver
        assert driver.center is not None
        text = floor_text(driver.center, driver.due.values(), f"{METADATA['name']} ({self.agent})")
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def feature_names(self) -> tuple[str, ...]:
        return self._driver.layout.feature_names(self._driver.role_of[self.agent])

    def action_names(self) -> tuple[str, ...]:
        return self._driver.layout.action_names(self._driver.role_of[self.agent])

    @property
    def center(self) -> Any:
        """The running core (its KPIs and ``result()`` once the episode has ended)."""
        return self._driver.center

    def _colleagues_act(self) -> None:
        """Run the core, the colleagues answering, until the learner decides or the episode ends."""
        driver = self._driver
        while driver.decision is not None and driver.decision.agent != self.agent:
            driver.act(self._policy(driver.decision))

    def _observation(self) -> np.ndarray:
        driver = self._driver
        return driver.observation(self.agent, driver.mask(self.agent, False))  # type: ignore[return-value]

    def _info(self) -> dict[str, Any]:
        return self._driver.turn_info(self.agent)


def register_tasks() -> None:
    """Register every task with Gymnasium (``csr_marl/<Task>-v4``); done on ``import csr_marl.envs``."""
    for name, kwargs in TASKS.items():
        env_id = f"csr_marl/{name}"
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=CenterTaskEnv, kwargs=kwargs)
