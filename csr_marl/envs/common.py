"""What the AEC and parallel environments share: construction, spaces, state, rendering, inspection."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle

from ..config.loading import load_scenario
from ..config.scenario import Scenario
from ..sim.center import ContactCenter
from ..sim.decisions import Decision
from .driver import CenterDriver, as_action  # noqa: F401  (as_action: importable from here, as before)
from .render import floor_text

ScenarioLike = str | os.PathLike[str] | Scenario
DEFAULT_DECISION_INTERVAL: float | None = None  # the parallel API's default: event-driven steps
MIN_DECISION_INTERVAL = 1e-6  # minutes: a finer epoch grid than the clock (or a step) can resolve
METADATA: dict[str, Any] = {
    "name": "csr_marl_v5",
    "render_modes": ["ansi", "human"],
    "is_parallelizable": False,
    "render_fps": 4,
}


def resolve_scenario(scenario: ScenarioLike, overrides: Mapping[str, Any] | None) -> Scenario:
    """A scenario name, YAML path or loaded scenario, with dotted-path overrides applied."""
    if isinstance(scenario, Scenario) and not overrides:
        return scenario
    return load_scenario(scenario, overrides)


class CenterEnvBase(EzPickle):
    """Mixed into both environments; the subclass sets up turns, rewards and infos."""

    metadata = METADATA
    possible_agents: list[str]
    agents: list[str]

    def __init__(
        self,
        scenario: ScenarioLike = "standard_day",
        seed: int | None = None,
        render_mode: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        uniform_spaces: bool = True,
        flat_observations: bool = True,
        strict: bool = False,
        decision_interval_minutes: float | None = DEFAULT_DECISION_INTERVAL,
    ) -> None:
        # Pickles as its arguments: a copy is a fresh environment (for worker processes).
        EzPickle.__init__(
            self, scenario, seed, render_mode,
            overrides=overrides, uniform_spaces=uniform_spaces, flat_observations=flat_observations,
            strict=strict, decision_interval_minutes=decision_interval_minutes,
        )
        if render_mode is not None and render_mode not in METADATA["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; choose one of {METADATA['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.scenario = resolve_scenario(scenario, overrides)
        interval = check_interval(decision_interval_minutes, self.scenario.horizon_minutes)
        self._driver = CenterDriver(
            self.scenario, uniform_spaces=uniform_spaces, flat_observations=flat_observations,
            strict=strict, interval=interval, seed=seed,
        )
        layout = self._driver.layout
        roles = self._driver.role_of
        self.possible_agents = list(self._driver.agents)
        self.agents = self.possible_agents.copy()
        # One space object per agent, built once (each seeds and samples on its own).
        self.observation_spaces = {
            a: layout.observation_space(roles[a], flat_observations) for a in self.possible_agents
        }
        self.action_spaces = {a: layout.action_space(roles[a]) for a in self.possible_agents}
        self.state_space = layout.state_space()

    # --- copies -----------------------------------------------------------------------------------
    # The core's staff are SimPy generators, which cannot be copied; but an episode is a pure function
    # of its seed and the actions taken, so a copy (pickle, deepcopy) replays them and arrives at the
    # very same state, ready for the same next step.
    def __getstate__(self) -> dict[str, Any]:
        state = EzPickle.__getstate__(self)
        driver = self._driver
        if driver.center is not None:
            seeds = driver._seeds.bit_generator.state if driver._seeds is not None else None
            state["_replay"] = (driver.episode_seed, list(self._history), seeds)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        EzPickle.__setstate__(self, state)
        replay = state.get("_replay")
        if replay is None:
            return
        seed, history, seeds = replay
        render_mode, self.render_mode = self.render_mode, None
        self.reset(seed=seed)
        for action in history:
            self.step(action)
        self.render_mode = render_mode
        if seeds is not None:
            assert self._driver._seeds is not None
            self._driver._seeds.bit_generator.state = seeds

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Discrete:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        """A global vector for centralised critics (see the env card's State section)."""
        self._require_reset()
        return self._driver.state()

    # --- inspection -----------------------------------------------------------------------------
    @property
    def center(self) -> ContactCenter:
        """The running core (its KPIs, streams and ``result()`` once the episode has ended)."""
        self._require_reset()
        assert self._driver.center is not None
        return self._driver.center

    @property
    def pending_decision(self) -> Decision | None:
        """The core's pending decision (what a built-in policy answers); None once the episode ended.
        In the parallel API, the first of :attr:`due_decisions`."""
        return self._driver.decision

    @property
    def due_decisions(self) -> dict[str, Decision]:
        """Every decision waiting for an answer, by agent (one in AEC; an epoch's in the parallel API)."""
        return dict(self._driver.due)

    def feature_names(self, agent_or_role: str) -> tuple[str, ...]:
        """The name of every position of an agent's (or a role's) observation vector."""
        return self._driver.layout.feature_names(self._driver.role_of.get(agent_or_role, agent_or_role))

    def action_names(self, agent_or_role: str) -> tuple[str, ...]:
        """What every action index means for an agent (or a role); the no-op is last."""
        return self._driver.layout.action_names(self._driver.role_of.get(agent_or_role, agent_or_role))

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(self._driver.layout.state_names)

    # --- rendering ------------------------------------------------------------------------------
    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi' (text) or 'human' (printed)"
            )
            return None
        self._require_reset()
        text = floor_text(self.center, self._driver.due.values(), METADATA["name"])
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """End the episode in progress (as a reset would); nothing else to free."""
        self._driver.end_episode()

    def _require_reset(self) -> None:
        if self._driver.center is None:
            raise RuntimeError("call reset() before using the environment")

    def _begin_episode(self) -> None:
        self._history: list[Any] = []


def check_interval(interval: Any, horizon: float) -> float | None:
    """``decision_interval_minutes`` as a float (None: event-driven), or a ValueError in one line.

    An epoch shorter than :data:`MIN_DECISION_INTERVAL` is refused: below it the grid outruns the
    clock (at 1e-15 minutes ``480 + interval == 480``, so an epoch never ends) or a step has to run
    through millions of empty epochs.
    """
    if interval is None:
        return None
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval < math.inf:
        raise ValueError(
            f"decision_interval_minutes must be None (event-driven) or a positive number of minutes, got {interval!r}"
        )
    if interval < MIN_DECISION_INTERVAL or horizon + interval == horizon:
        raise ValueError(
            f"decision_interval_minutes={interval!r} is finer than the simulation clock can step "
            f"(at least {MIN_DECISION_INTERVAL:g} minutes); use None for event-driven steps"
        )
    return float(interval)
