"""What a training run is: scenario, algorithm, budget, seed and hyperparameters (no torch needed here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..config.domain import ROLES
from ..config.loading import load_scenario
from ..config.scenario import Scenario

ALGORITHMS = ("ppo", "a2c")


class TrainConfig(BaseModel):
    """One training run; with the same config and seed, the same run (on the same torch build).

    Every agent of a role shares that role's actor and critic (one small MLP each, picked by the role
    one-hot of ``uniform_spaces`` observations). ``steps`` counts environment steps: AEC turns, one
    decision each. Rollouts are whole episodes, ``episodes_per_update`` of them per update.

    Stronger learners, all off by default:

    * ``smdp_tau`` (minutes): semi-MDP discounting. The discount between an agent's decision and its
      next is ``gamma ** (dt / smdp_tau)``, dt the simulated minutes between them, so ``gamma`` is
      the discount per ``smdp_tau`` minutes rather than per decision (:mod:`.turns`).
    * ``central_critic``: a MAPPO-style critic that reads the agent's observation followed by
      ``env.state()`` at that decision; the actor, and so a checkpoint's policy, is unchanged.
    * ``init_from`` (role -> checkpoint path): curriculum. The role's actor and critic start from
      that checkpoint's (trained on another task, e.g. triage from ``tasks/classify``), copied by
      feature and action name where the layouts differ (:mod:`.curriculum`).
    * ``warm_start`` (a policy name): before the first rollout each actor is fitted to that built-in
      policy's decisions on ``warm_start_episodes`` episodes of the training scenario (behaviour
      cloning, :mod:`.warm_start`); reinforcement learning goes on from there. ``warm_start_roles``
      limits it to some roles, e.g. those ``init_from`` does not bring.
    * ``freeze_roles``: these roles' actors keep the weights they start with (from ``init_from`` or the
      warm start) while reinforcement learning trains the others, e.g. a triage trained on
      ``tasks/classify`` kept as it is on the whole day, where the day's rewards would wear it down.
    * ``role_lr`` (role -> factor): that role's actor learns at ``lr`` times the factor (its own Adam
      parameter group; the decay applies to every group alike), e.g. a triage from ``tasks/classify``
      that adapts to the day slowly instead of being kept (``freeze_roles``) or trained at full rate.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str = Field(min_length=1, description="scenario name or YAML path")
    overrides: dict[str, Any] = Field(default_factory=dict, description="dotted-path scenario overrides")
    algo: Literal["ppo", "a2c"] = "ppo"
    steps: int = Field(gt=0, description="environment steps (AEC turns) to train for")
    seed: int = Field(default=0, ge=0)
    reward_mode: Literal["shared", "individual", "mixed"] | None = Field(
        default=None, description="training reward (rewards.mode); None keeps the scenario's"
    )
    split_team_costs: bool = Field(
        default=False,
        description="training reward: each agent bears 1/N of the team-wide costs (waiting, abandonment)",
    )
    envs: int = Field(default=4, ge=1, description="environments stepped side by side")
    episodes_per_update: int | None = Field(default=None, ge=1, description="None: one per environment")
    hidden: int = Field(default=256, ge=8, description="width of the two hidden layers")
    lr: float = Field(default=1e-3, gt=0)
    lr_decay: bool = Field(default=False, description="anneal the learning rate linearly to 0 over the steps")
    gamma: float = Field(default=0.99, ge=0, le=1, description="discount per decision of the same agent")
    gae_lambda: float = Field(default=0.95, ge=0, le=1)
    ent_coef: float = Field(default=0.01, ge=0)
    vf_coef: float = Field(default=0.5, ge=0)
    eps_clip: float = Field(default=0.2, gt=0, description="PPO's ratio clip")
    max_grad_norm: float = Field(default=0.5, gt=0)
    return_scaling: bool = Field(default=False, description="scale returns by their running std (critic targets)")
    batch_size: int = Field(default=256, ge=1)
    repeat: int = Field(default=4, ge=1, description="passes over each rollout per update")
    eval_points: int = Field(default=10, ge=1, description="learning-curve points (one checkpoint each)")
    eval_episodes: int = Field(default=3, ge=1, description="greedy episodes per learning-curve point")
    kpis: tuple[str, str] | None = Field(default=None, description="the curve's two KPIs; None: by roles")
    threads: int = Field(default=1, ge=1, description="torch CPU threads")
    smdp_tau: float | None = Field(
        default=None, gt=0, description="semi-MDP discounting: gamma per this many simulated minutes; None: per decision"
    )
    central_critic: bool = Field(default=False, description="the critic also reads env.state() (MAPPO-style)")
    init_from: dict[str, str] = Field(
        default_factory=dict, description="curriculum: role -> checkpoint path its actor and critic start from"
    )
    warm_start: str | None = Field(
        default=None,
        description="behaviour-clone this built-in policy (e.g. text_classifier) into the actors before RL",
    )
    warm_start_episodes: int = Field(default=40, ge=1, description="teacher episodes recorded for the warm start")
    warm_start_epochs: int = Field(default=20, ge=1, description="passes over the teacher's decisions")
    warm_start_roles: list[str] | None = Field(
        default=None, description="the roles the warm start fits (None: every staffed role), e.g. those init_from does not bring",
    )

    freeze_roles: list[str] = Field(
        default_factory=list,
        description="roles whose actor keeps its starting weights (init_from or warm start); RL trains the others",
    )
    role_lr: dict[str, float] = Field(
        default_factory=dict, description="role -> factor of lr for that role's actor (1: the others' rate)",
    )

    @model_validator(mode="after")
    def _fits(self) -> "TrainConfig":
        if self.eval_points > self.steps:
            raise ValueError(f"eval_points ({self.eval_points}) cannot exceed steps ({self.steps})")
        if self.warm_start is not None:
            from ..policies import policy_names

            if self.warm_start not in policy_names():
                raise ValueError(f"warm_start: unknown policy {self.warm_start!r} (policies: {', '.join(policy_names())})")
        for role in self.warm_start_roles or ():
            if role not in ROLES:
                raise ValueError(f"warm_start_roles: unknown role {role!r} (roles: {', '.join(ROLES)})")
        warmed = set(ROLES if self.warm_start_roles is None else self.warm_start_roles) if self.warm_start else set()
        for role in self.freeze_roles:
            if role not in ROLES:
                raise ValueError(f"freeze_roles: unknown role {role!r} (roles: {', '.join(ROLES)})")
            if role not in self.init_from and role not in warmed:
                raise ValueError(
                    f"freeze_roles: {role!r} would keep random weights; start it with init_from or the warm start"
                )
        for role, factor in self.role_lr.items():
            if role not in ROLES:
                raise ValueError(f"role_lr: unknown role {role!r} (roles: {', '.join(ROLES)})")
            if not (0 < factor < float("inf")):
                raise ValueError(f"role_lr[{role}]: the factor must be positive and finite, got {factor} "
                                 "(a role that must not learn goes in freeze_roles)")
            if role in self.freeze_roles:
                raise ValueError(f"role_lr[{role}]: {role!r} is in freeze_roles and does not learn")
        for role, path in self.init_from.items():
            if role not in ROLES:
                raise ValueError(f"init_from: unknown role {role!r} (roles: {', '.join(ROLES)})")
            if not path:
                raise ValueError(f"init_from[{role}]: empty checkpoint path")
        return self

    @property
    def rollout_episodes(self) -> int:
        return self.episodes_per_update or self.envs

    def evaluation_scenario(self) -> Scenario:
        """The scenario as evaluated: with ``overrides``, its own rewards (the team return)."""
        return load_scenario(self.scenario, self.overrides)

    def training_scenario(self) -> Scenario:
        """The scenario as trained on: ``overrides``, then the training reward (mode, cost split).

        With ``split_team_costs`` the team-wide components are divided by the number of agents, so
        in ``individual`` mode the agents' rewards add up to the team's instead of counting waiting
        and abandonment once per agent, which drowns what each agent did itself.
        """
        overrides = dict(self.overrides)
        if self.reward_mode is not None:
            overrides["rewards.mode"] = self.reward_mode
        if self.split_team_costs:
            base = load_scenario(self.scenario, self.overrides)
            agents = sum(base.staffing.peak(role) for role in ROLES)
            weights = base.rewards
            if weights.pricing == "manager":  # the team-wide costs are the manager's rates
                overrides["manager.abandonment"] = base.manager.abandonment / agents
                overrides["manager.waiting_per_hour"] = base.manager.waiting_per_hour / agents
            else:
                overrides["rewards.abandonment"] = weights.abandonment / agents
                overrides["rewards.waiting_per_minute"] = {p: v / agents for p, v in weights.waiting_per_minute.items()}
        return load_scenario(self.scenario, overrides)


def default_kpis(scenario: Scenario) -> tuple[str, str]:
    """Two KPIs that show what the staffed roles learn: triage accuracy alone, the workflow, or the floor."""
    staffed = {role for role in ("triage", "resolver", "escalation") if scenario.staffing.peak(role) > 0}
    if staffed == {"triage"}:
        return ("triage_accuracy", "triage_priority_accuracy")
    if "triage" not in staffed:
        return ("resolution_rate", "first_contact_resolution")
    return ("resolution_rate", "abandonment_rate")
