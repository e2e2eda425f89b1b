"""The AEC environment as a TorchRL ``EnvBase``: one step per decision, the mask where TorchRL reads it.

TorchRL's ``PettingZooWrapper`` builds and checks a nested TensorDict per agent group at every step
(one group per agent over the AEC API, fourteen on ``standard_day``), so a step costs milliseconds
against the environment's tenth of one (1-2 % of its decisions per second). :class:`TorchRLEnv` is
the turn-based view the environment already has (the AEC API: the agent whose decision is due acts),
one flat TensorDict per decision:

* ``observation``: the deciding agent's vector (uniform spaces: one size for every role), float32;
* ``action_mask``: its legal actions, bool, for a ``MaskedCategorical`` actor; the action spec's own
  mask follows it, so ``env.rand_action()`` and ``env.rollout(n)`` without a policy act legally (a
  ``Collector`` given ``policy=None`` does not: see :class:`MaskedRandomPolicy`);
* ``agent``: the deciding agent's index in ``possible_agents`` (for one policy shared by every agent
  that still knows who acts; the observation also names the role);
* ``reward``: shape ``(n_agents,)``, what each agent earned during the step (PettingZoo's
  ``env.rewards``, under the scenario's reward mode): every column adds up to the agent's return;
* ``done`` / ``terminated`` / ``truncated``: the shift ended at this step (terminated: before the
  horizon, ``max_tickets`` reached; truncated: at the horizon); the closing observation is the first
  agent's, with only the no-op unmasked.

An episode in which nobody has anything to decide is skipped at reset (it teaches nothing). The core's
result of every finished episode is kept in :attr:`finished`, and the running one is :attr:`center`.

    from torchrl.collectors import Collector
    from csr_marl.envs.torchrl import MaskedRandomPolicy, TorchRLEnv
    env = TorchRLEnv("standard_day", seed=0)
    collector = Collector(env, MaskedRandomPolicy(seed=0), frames_per_batch=1000, total_frames=10_000)

Options are ``csr_marl.raw_env``'s (``overrides``, ``strict``, ...); observations must be flat and
spaces uniform (the defaults). Needs ``torchrl`` (the ``consumers`` extra).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from ..sim.result import SimulationResult
from .aec import ContactCenterAEC
from .common import ScenarioLike

EMPTY_EPISODES_ALLOWED = 100


class TorchRLEnv(EnvBase):
    """``csr_marl.raw_env(scenario, **options)`` as a TorchRL environment (see the module docstring)."""

    def __init__(self, scenario: ScenarioLike = "standard_day", *, seed: int | None = None, **options: Any) -> None:
        if options.get("flat_observations", True) is False or options.get("uniform_spaces", True) is False:
            raise ValueError("TorchRLEnv needs flat observations over uniform spaces: leave both options at True")
        super().__init__(device="cpu", batch_size=torch.Size([]))
        self.aec = ContactCenterAEC(scenario, seed, **options)
        self._driver = self.aec._driver
        self.possible_agents = list(self.aec.possible_agents)
        self._agent_ids = {agent: torch.tensor(i) for i, agent in enumerate(self.possible_agents)}
        first = self.possible_agents[0]
        observation_space = self.aec.observation_space(first)
        n_actions = int(self.aec.action_space(first).n)
        self.finished: list[SimulationResult] = []
        self._next_seed = seed
        self.observation_spec = Composite(
            observation=Unbounded(shape=observation_space.shape, dtype=torch.float32),
            action_mask=Binary(n=n_actions, dtype=torch.bool),
            agent=Categorical(len(self.possible_agents), shape=()),
        )
        self.action_spec = Categorical(n_actions, shape=())
        self.reward_spec = Unbounded(shape=(len(self.possible_agents),), dtype=torch.float32)
        self.done_spec = Composite(
            done=Binary(n=1, dtype=torch.bool),
            terminated=Binary(n=1, dtype=torch.bool),
            truncated=Binary(n=1, dtype=torch.bool),
        )

    @property
    def center(self) -> Any:
        """The running core (its KPIs and ``result()``, ``illegal_actions`` among them)."""
        return self.aec.center

    def _observe(self, agent: str, noop: bool, **entries: torch.Tensor) -> TensorDict:
        """The TensorDict of ``agent``'s observation and mask (with ``noop``: the closing one, only the
        no-op legal); the action spec's mask follows it."""
        driver = self._driver
        mask = torch.from_numpy(driver.mask(agent, noop).astype(bool))
        self.action_spec.update_mask(mask)
        vector = driver.observation(agent, None)
        return TensorDict(
            {"observation": torch.from_numpy(vector), "action_mask": mask, "agent": self._agent_ids[agent], **entries},
            batch_size=(),
        )

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDict:
        seed, self._next_seed = self._next_seed, None
        driver = self._driver
        for _ in range(EMPTY_EPISODES_ALLOWED):
            self.aec.reset(seed=seed)
            if driver.decision is not None:
                return self._observe(driver.decision.agent, False, **_flags(False, False))
            seed = None  # the next episode's seed is drawn from this one's
        raise RuntimeError(f"{EMPTY_EPISODES_ALLOWED} episodes in a row without a decision: nothing to learn here")

    def _step(self, tensordict: TensorDictBase) -> TensorDict:
        driver = self._driver
        self.aec.step(int(tensordict["action"]))
        last_step = driver.account.last_step
        reward = torch.tensor([last_step(agent) for agent in self.possible_agents], dtype=torch.float32)
        decision = driver.decision
        if decision is not None:
            return self._observe(decision.agent, False, reward=reward, **_flags(False, False))
        # The shift ended: a closing observation (the first agent's, only the no-op legal).
        assert driver.center is not None
        self.finished.append(driver.center.result())
        early = driver.ended_early
        return self._observe(self.possible_agents[0], True, reward=reward, **_flags(early, not early))

    def _set_seed(self, seed: int | None) -> None:
        """The next reset's seed (later episodes draw theirs from it, as the AEC environment's do)."""
        self._next_seed = seed

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Close the environment (the episode in progress is judged for illegal actions first)."""
        self.aec.close()
        super().close(raise_if_closed=raise_if_closed)


def _flags(terminated: bool, truncated: bool) -> dict[str, torch.Tensor]:
    return {
        "done": torch.tensor([terminated or truncated]),
        "terminated": torch.tensor([terminated]),
        "truncated": torch.tensor([truncated]),
    }


class MaskedRandomPolicy:
    """Uniformly random legal actions, read from each TensorDict's ``action_mask`` (any batch shape).

    For random collection: a ``Collector`` given ``policy=None`` samples from a *copy* of the action
    spec made when it is built (TorchRL's ``RandomPolicy``), whose mask is the first observation's,
    so most of its actions are illegal; ``env.rollout(n)`` without a policy reads the live spec.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Write a uniformly random legal ``action`` for every entry of the batch."""
        mask = tensordict["action_mask"]
        # The largest of independent uniform draws over the legal actions is a uniform pick among them.
        draws = torch.rand(mask.shape, generator=self.generator) * mask
        tensordict["action"] = draws.argmax(-1)
        return tensordict
