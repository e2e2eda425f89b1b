# noqa: D212, D415
"""
# Contact center (csr_marl_v0)

| Import             | `csr_marl.env(scenario="standard_day")`, `csr_marl.parallel_env(...)`, `csr_marl.raw_env(...)` |
|--------------------|------------------------------------------------------------------------------------------------|
| Actions            | Discrete, masked                                                                               |
| Parallel API       | Yes (one decision per epoch, see below)                                                        |
| Agents             | `triage_0..`, `resolver_0..`, `escalation_0..`: one per staff slot at peak staffing            |
| Observation        | `Dict(observation=Box(float32, (n_role,)), action_mask=Box(int8, (a_role,)))`                  |
| Observation values | [0, 1], text features in [-1, 1]                                                                |
| Action mask        | also in `info["action_mask"]`                                                                  |
| State              | `Box(float32, (65 + D + F + 26K,))`                                                            |

Staff of a customer-service contact center are the agents: **triage** reads each new ticket and sets
its category, priority and route; **resolvers** pick tickets from their queue and work them through
tools (check the order, check the payment, refund, ... respond); the **escalation desk** takes what
needs a specialist. Underneath runs the SimPy core (`csr_marl.sim.ContactCenter`): arrivals,
patience, handle times and KPIs are the core's; this module only presents its decisions to agents.

## Agents and turns

A staff member who needs a decision pauses the simulation; `agent_selection` is that agent (earliest
sim time first, ties in the core's fixed event order). Its action resumes the simulation until the next
decision. Nobody is asked when there is nothing to decide (a decision with one legal action is taken
by the core). The agent list never changes during an episode; agents of roles with no headcount at
peak do not exist. `env.unwrapped.pending_decision` is the core's `Decision` (for built-in policies).

**Parallel API (epochs).** The core pauses at one decision at a time, and the next can depend on how
this one is answered, so each parallel step is an epoch of exactly one decision: the agent whose
decision is due acts, every other agent has only the no-op unmasked (its action is ignored; anything
else is illegal). Each step returns observations for every live agent (O(agents) per step).

## Observation

A float32 vector per role, blocks in this order (`K` = `observation.queue_slots`, default 5; `D` =
`observation.text_features`, default 32; `F` = number of (fact, value) pairs in the ticket bank's
`fact_values`, 30 for `tickets/default.yaml`). `env.unwrapped.feature_names(agent)` names every entry.
`squash(x, s) = x / (x + s)`; "age" is minutes since the contact arrived, `squash(age, 15)`.

| block | size | entries |
|---|---|---|
| floor | 10 | `shift_elapsed` = minute / horizon; `queue_<role>` = squash(waiting tickets, 10) for triage, resolver, escalation; `load_<role>` = staff with a ticket in hand / staff on shift (capped at 1); `staffed_<role>` = staff on shift / peak headcount |
| phase | 4 | one-hot: `triage` (ticket in hand to classify), `pick` (choose a queue slot), `work` (choose a tool), `none` (nothing to decide) |
| ticket | 35 + D + F | the ticket in the agent's hands (zeros if none): `ticket_present`; `text_0..D-1` signed hashed word counts of subject and body, L2-normalised, numbers folded into one token; `tier_*` (3); `declared_category_*` (4) and `declared_priority_*` (4), the customer's own; `assigned_category_*` (4) and `assigned_priority_*` (4), triage's (the declared ones before triage); `ticket_age`; `returning` (a reopened contact); `escalated`; `action_budget_used` = tool actions / `workflow.max_actions_per_ticket`; `fact_<fact>=<value>` (F) one-hot of the facts tools have revealed (`bank.fact_encoding`); `done_<tool>` (11) work tools already done |
| slots | 13 K | resolver and escalation only: the first K tickets of the role's queue in service order (in the `pick` phase, exactly the decision's slots); per slot `present`, `priority_*` (4, assigned), `tier_*` (3), `age`, `category_*` (4, assigned) |

Sizes with the defaults and the default bank: triage 111, resolver and escalation 176.
With `uniform_spaces=True` every vector starts with a role one-hot (`role_triage`, `role_resolver`,
`role_escalation`) and is zero-padded (`pad_*`) to the longest role: 179 with the defaults.

## Actions

Discrete, the core's layout per role plus one final **no-op** (index `n - 1`), used only by the
parallel API for agents with nothing to decide; in the AEC API it is always masked.
`env.unwrapped.action_names(agent)` names every index.

| role | actions |
|---|---|
| triage (33) | `(category * 4 + priority) * 2 + route` over (billing, shipping, technical, general) x (low, medium, high, urgent) x (resolver, escalation); routing to escalation is masked when nobody staffs the desk |
| resolver (K + 9) | `0..K-1` pick a visible slot; then `check_order_status, check_payment, initiate_refund, update_shipping, troubleshoot, reset_account, escalate_issue, respond_user` |
| escalation (K + 8) | `0..K-1` pick a slot of the escalation queue; then `approve_refund, engineering_fix, fraud_review, account_recovery, legal_review, respond_user, return_to_resolver` |

With `uniform_spaces=True` every role has the largest action count (padding always masked, no-op last).
An action the mask forbids raises `csr_marl.sim.IllegalActionError` naming the legal actions, unless
the scenario sets `rewards.illegal_action`: then it costs that penalty and the decision stays pending.

## Rewards

Components and weights come from the scenario's `rewards:` block (DESIGN §5): classification,
priority, routing, step (needed or wasted tool), resolution (by tier), waiting (per ticket-minute by
priority), abandonment, sla_breach, illegal_action. The core attributes each to the agent responsible;
waiting and abandonment are team-wide. `rewards.mode`:

* `shared`: every agent receives the team's total;
* `individual`: each agent receives its own components; team-wide ones go to every agent;
* `mixed`: `mixed_share * shared + (1 - mixed_share) * individual`.

Reward accrued while an agent waits for its next turn reaches it through PettingZoo's cumulative
rewards (`env.last()`). `info["reward_components"]` is a float64 vector ordered as
`csr_marl.envs.REWARD_COMPONENTS` that sums to the reward: in AEC, to `last()`'s reward (since the
agent's last turn); in the parallel API, to the step's reward. (A vector, not a dict, so that TorchRL
and vectorised wrappers can stack it: `dict(zip(REWARD_COMPONENTS, info["reward_components"]))`.)

`rewards`, `_cumulative_rewards` and `infos` are computed on read (a step costs the same with 4 agents
or 200) but behave as plain dicts to wrappers: PettingZoo's `TerminateIllegalWrapper` and SuperSuit's
`clip_reward_v0` / `reward_lambda_v0` may write into them; what a wrapper writes is what readers see
until the environment's next step, and never reaches the core's books (reward ledger, KPIs, team return).

## Info

`action_mask`; `sim_time` (minutes); `time_since_last_decision` (minutes since the agent's own last
decision, for semi-MDP discounting); `reward_components`.

## State

`env.state()`, `env.state_space`: the floor block; the pending decision's role one-hot and phase
one-hot; its ticket block; that ticket's hidden truth (true category one-hot, true priority one-hot,
needs escalation); the first K slots of the resolver queue and of the escalation queue (13 K each);
squash(count, 100) of arrived, resolved, abandoned and closed-unresolved contacts.
`env.unwrapped.state_names` names every entry.

## Episode end

At `horizon_minutes` every agent is truncated at once. A scenario with `max_tickets` ends early once
that many tickets have arrived and all are closed (every agent terminated at once). In AEC, each done
agent then steps once with `None` (PettingZoo's dead-step convention); in the parallel API the step
returns the flags and `agents` becomes empty.

## Arguments

`csr_marl.env(scenario="standard_day", seed=None, render_mode=None, *, overrides=None, uniform_spaces=False,
flat_observations=False)`

* `scenario`: a name (`csr_marl.config.scenario_names()`, e.g. `tasks/classify`), a YAML path, or a
  loaded `Scenario`.
* `seed`: the seed of the first `reset()` without one. `reset(seed=s)` seeds the core exactly as
  `csr_marl.simulate(scenario, seed=s)` does; later seedless resets draw their seeds from `s`.
* `render_mode`: `"ansi"` (`render()` returns the floor as text) or `"human"` (printed every step).
* `overrides`: dotted-path scenario overrides, e.g. `{"horizon_minutes": 60, "rewards.mode": "mixed"}`.
* `uniform_spaces`: pad every role to one observation and one action space, with a role one-hot.
* `flat_observations`: the observation is the float32 `Box` alone and the mask is only in
  `info["action_mask"]`, for wrappers that take Box observations (SuperSuit's padding) or read the
  mask from one place (TorchRL's `PettingZooWrapper(..., use_mask=True)`).

`env()` wraps `raw_env()` in PettingZoo's `AssertOutOfBoundsWrapper` and `OrderEnforcingWrapper`.

## Usage

    import numpy as np, csr_marl
    env = csr_marl.env("standard_day", seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        legal = np.flatnonzero(observation["action_mask"])
        env.step(None if terminated or truncated else int(rng.choice(legal)))
    print(env.unwrapped.center.result().kpis["service_level"])

A built-in policy answers the core's pending decision; with the same seed it gives the same KPIs as
`csr_marl.simulate(scenario, policy="heuristic", seed=0)`:

    policy = csr_marl.policies.HeuristicPolicy(env.unwrapped.scenario, env.unwrapped.center.streams["policy"])
    action = policy(env.unwrapped.pending_decision)

## Version history

* v0: initial release (csr_marl 0.1.0). Later in v0: integer actions only (5.7 or "5" is refused, not
  truncated); clear errors before `reset()` and after the end; a parallel episode with no decision ends
  at `reset()`; copies (deepcopy, pickle) of a live environment replay to the same state; wrappers may
  write into `rewards` / `_cumulative_rewards` / `infos`.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

from ..sim.rewards import COMPONENTS as REWARD_COMPONENTS
from .aec import ContactCenterAEC
from .common import DEFAULT_DECISION_INTERVAL, METADATA, ScenarioLike
from .parallel import ContactCenterParallel
from .tasks import TASKS, CenterTaskEnv, register_tasks

parallel_env = ContactCenterParallel
TURNS = ("event", "cycle")


def raw_env(
    scenario: ScenarioLike = "standard_day",
    seed: int | None = None,
    render_mode: str | None = None,
    *,
    turns: str | None = None,
    max_cycles: int | None = None,
    **options: Any,
) -> AECEnv:
    """The AEC environment, unwrapped (PettingZoo's ``raw_env``).

    ``turns="event"`` (the default): one turn per decision, the agent whose decision is due.
    ``turns="cycle"`` (the default when ``max_cycles`` is given): every live agent takes one turn per
    decision epoch, as in PettingZoo's cyclic environments -- the parallel API played one agent at a
    time (PettingZoo's ``parallel_to_aec``), truncated after ``max_cycles`` epochs if given.
    """
    turns = turns if turns is not None else ("event" if max_cycles is None else "cycle")
    if turns == "event":
        if max_cycles is not None:
            raise ValueError("max_cycles counts cycles in which every agent acts: use turns='cycle' with it")
        return ContactCenterAEC(scenario, seed, render_mode, **options)
    if turns == "cycle":
        return parallel_to_aec_wrapper(
            ContactCenterParallel(scenario, seed, render_mode, max_cycles=max_cycles, **options)
        )
    raise ValueError(f"turns must be one of {TURNS}, got {turns!r}")


def env(
    scenario: ScenarioLike = "standard_day",
    seed: int | None = None,
    render_mode: str | None = None,
    **options: Any,
) -> wrappers.OrderEnforcingWrapper:
    """The AEC environment in PettingZoo's standard checking wrappers (arguments as :func:`raw_env`)."""
    aec: Any = raw_env(scenario, seed, render_mode, **options)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    return wrappers.OrderEnforcingWrapper(aec)


def _register() -> None:
    """The multi-agent environments in PettingZoo's registry (where the installed version has one)
    and the single-agent tasks in Gymnasium's: ``import csr_marl.envs`` is enough."""
    register_tasks()
    try:
        from pettingzoo import aec_registry, parallel_registry, register
    except ImportError:  # PettingZoo before 1.27 has no registry
        return
    if "csr_marl/ContactCenter-v1" not in aec_registry:
        register("aec", "csr_marl/ContactCenter-v1", entry_point=env)
    if "csr_marl/ContactCenter-v1" not in parallel_registry:
        register("parallel", "csr_marl/ContactCenter-v1", entry_point=parallel_env)


_register()

__all__ = [
    "DEFAULT_DECISION_INTERVAL",
    "METADATA",
    "REWARD_COMPONENTS",
    "TASKS",
    "TURNS",
    "CenterTaskEnv",
    "ContactCenterAEC",
    "ContactCenterParallel",
    "env",
    "parallel_env",
    "raw_env",
]
