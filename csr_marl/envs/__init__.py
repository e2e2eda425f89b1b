# noqa: D212, D415
"""
# Contact center (csr_marl_v5)

| Import             | `csr_marl.env(scenario="standard_day")`, `csr_marl.parallel_env(...)`, `csr_marl.raw_env(...)` |
|--------------------|------------------------------------------------------------------------------------------------|
| Registered         | PettingZoo `csr_marl/ContactCenter-v5` (aec, parallel); Gymnasium tasks `csr_marl/*-v4`         |
| Actions            | `Discrete(33)` for every agent (padding and the no-op masked), masked                          |
| Parallel API       | Yes: event-driven by default (the AEC env's contact center); epochs as an option, see below    |
| Agents             | `triage_0..`, `resolver_0..`, `escalation_0..`: one per staff slot at peak staffing            |
| Observation        | `Box(float32, (181,))` for every agent (role one-hot + role features, zero-padded)             |
| Observation values | [0, 1], text features in [-1, 1]                                                                |
| Action mask        | `info["action_mask"]` (int8); in the observation Dict with `flat_observations=False`           |
| Illegal action     | costs `rewards.illegal_action` (-0.1), replaced by a random legal action; warned per agent     |
| State              | `Box(float32, (67 + D + F + 26K,))`                                                            |

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

**Cyclic AEC turns.** `turns="cycle"` (the default when `max_cycles` is given) gives PettingZoo's
cyclic AEC instead: every live agent takes one turn per parallel step, the parallel API played one
agent at a time (PettingZoo's `parallel_to_aec`), truncated after `max_cycles` steps.

**Parallel API (the same contact center).** By default (`decision_interval_minutes=None`) a
parallel step runs the core to the next minute at which a decision is due, and every staff member
whose decision is due at that minute acts in the step (ties in the core's event order; two picks of
one ticket: the first gets it, the second takes the first of its visible tickets still waiting). No
decision waits, so this is the AEC env's contact center: with the same seed and team the episode is
the AEC env's, except where two decisions fall due at the same minute (a pick then sees the queue
before, not after, its colleague's pick), and over 20 seeds on `standard_day`, `surge` and
`night_shift` every headline KPI of `parallel_env()` and of `RLlibEnv` lies inside the AEC env's
99 % confidence interval (`benchmarks/results/parallel_epochs.md`; `tests/test_env_parallel.py`
checks the heuristic team seed by seed, `tests/test_parallel_fidelity.py` the intervals).
Agents with nothing to decide have only the no-op unmasked and `info["decision_due"] == False`;
their actions are ignored (in strict mode anything but the no-op raises) and they may be left out of
the actions dict, so libraries that can skip them do: RLlib through `csr_marl.envs.rllib.RLlibEnv`,
which observes only the deciding agents (no forced no-ops, the same dynamics and rewards), and
`ParallelVectorEnv`. Each step returns an observation for every live agent, but only the agents
whose decision is due get theirs computed: an agent with nothing to decide gets the constant
*waiting observation* of its role (role one-hot, phase `none`, zeros elsewhere; a fresh array), since
its action is ignored anyway. Such a sample is a **no-op sample**, marked `info["decision_due"] ==
False`: learners should drop it (it carries no decision; the rewards it shows reach the agent's next
real transition). At the episode's end every agent gets its full observation, so trajectories close on
a real state.

*The cost of fidelity is batching.* Decisions on this floor rarely coincide: at the default a step
holds about one real decision and most agent samples of PettingZoo's parallel API are forced no-ops
(measured over 20 seeds with the heuristic and random teams: 1.00-1.07 real decisions per step;
forced no-ops 67 % of agent samples on `night_shift`, 92-95 % on `standard_day` and `surge`). A
library that pays per agent sample should skip the agents whose `decision_due` is False (as
`RLlibEnv` does), not batch by time.

**Decision epochs (an explicit option).** `decision_interval_minutes=x` runs the core in epochs of
x minutes (a fixed grid from minute 0): every staff member whose decision falls due during an epoch
waits for its end, then all of them act in one step (epochs with nothing due are skipped; at the
epoch's end the queues are brought up to date and a waiting pick is shown its queue as it is then: a
pick whose queue emptied, or whose staff member went off shift, is withdrawn; one with a single
ticket left takes it). Epochs batch more decisions per step but every decision waits up to x
minutes and a staff member decides at most once per epoch, which throttles triage: **a different
contact center**. Measured over 20 seeds (means; the AEC env's are the reference):

| scenario, team | env | decisions / step | forced no-ops | FR service level | abandonment | resolution rate | team return |
|---|---|---|---|---|---|---|---|
| standard_day, heuristic | AEC env | 1.00 | 0% | 0.873 | 0.063 | 0.651 | 725 |
| standard_day, heuristic | `parallel_env()` default | 1.05 | 93% | 0.873 | 0.063 | 0.651 | 725 |
| standard_day, heuristic | epochs 0.05 min | 1.20 | 91% | 0.835 | 0.070 | 0.647 | 715 |
| standard_day, heuristic | epochs 0.25 min | 1.92 | 86% | 0.680 (out) | 0.095 (out) | 0.633 | 677 (out) |
| standard_day, heuristic | epochs 1 min | 4.85 | 65% | 0.219 (out) | 0.203 (out) | 0.564 (out) | 502 (out) |
| surge, heuristic | AEC env | 1.00 | 0% | 0.511 | 0.156 | 0.589 | 831 |
| surge, heuristic | `parallel_env()` default | 1.06 | 95% | 0.511 | 0.156 | 0.589 | 831 |
| surge, heuristic | epochs 0.05 min | 1.29 | 94% | 0.497 | 0.162 | 0.589 | 821 |
| surge, heuristic | epochs 0.25 min | 2.32 | 89% | 0.386 (out) | 0.188 (out) | 0.569 (out) | 750 (out) |
| surge, heuristic | epochs 1 min | 5.62 | 73% | 0.174 (out) | 0.286 (out) | 0.509 (out) | 524 (out) |
| night_shift, heuristic | AEC env | 1.00 | 0% | 0.870 | 0.013 | 0.598 | 75 |
| night_shift, heuristic | `parallel_env()` default | 1.00 | 67% | 0.870 | 0.013 | 0.598 | 75 |
| night_shift, heuristic | epochs 0.05 min | 1.01 | 66% | 0.863 | 0.014 | 0.598 | 75 |
| night_shift, heuristic | epochs 0.25 min | 1.06 | 65% | 0.842 | 0.016 | 0.595 | 74 |
| night_shift, heuristic | epochs 1 min | 1.26 | 58% | 0.717 (out) | 0.051 (out) | 0.569 | 65 (out) |

(`benchmarks/results/parallel_epochs.md` has the random team's rows and the 99 % intervals; "(out)"
marks a mean outside the AEC env's 99 % confidence interval.)

Values below 1e-6 minutes are refused at construction (`ValueError`, one line): the clock cannot
step a finer grid (at 1e-15 minutes `480 + x == 480`).

## Observation

A float32 vector per role, blocks in this order (`K` = `observation.queue_slots`, default 5; `D` =
`observation.text_features`, default 32; `F` = number of (fact, value) pairs in the ticket bank's
`fact_values`, 30 for `tickets/default.yaml`). `env.unwrapped.feature_names(agent)` names every entry.
`squash(x, s) = x / (x + s)`; "age" is minutes since the contact arrived, `squash(age, 15)`.

| block | size | entries |
|---|---|---|
| floor | 10 | `shift_elapsed` = minute / horizon; `queue_<role>` = squash(waiting tickets, 10) for triage, resolver, escalation; `load_<role>` = staff with a ticket in hand / staff on shift (capped at 1); `staffed_<role>` = staff on shift / peak headcount |
| phase | 4 | one-hot: `triage` (ticket in hand to classify), `pick` (choose a queue slot), `work` (choose a tool), `none` (nothing to decide) |
| ticket | 37 + D + F | the ticket in the agent's hands (zeros if none): `ticket_present`; `text_0..D-1` signed hashed word counts of subject and body, L2-normalised, numbers folded into one token; `tier_*` (3); `declared_category_*` (4) and `declared_priority_*` (4), the customer's own; `assigned_category_*` (4) and `assigned_priority_*` (4), triage's (the declared ones before triage); `ticket_age`; `returning` (a reopened contact); `escalated`; `action_budget_used` = tool actions / `workflow.max_actions_per_ticket`; `customer_sentiment` = (sentiment + 1) / 2, 0.5 neutral (`customers.sentiment`); `questions_asked` = min(questions / 3, 1); `fact_<fact>=<value>` (F) one-hot of the facts tools have revealed (`bank.fact_encoding`); `done_<tool>` (11) work tools already done |
| slots | 13 K | resolver and escalation only: the first K tickets of the role's queue in service order (in the `pick` phase, exactly the decision's slots); per slot `present`, `priority_*` (4, assigned), `tier_*` (3), `age`, `category_*` (4, assigned) |

Sizes with the defaults and the default bank: triage 113, resolver and escalation 178.
With `uniform_spaces=True` every vector starts with a role one-hot (`role_triage`, `role_resolver`,
`role_escalation`) and is zero-padded (`pad_*`) to the longest role: 181 with the defaults.

## Actions

Discrete, the core's layout per role plus one final **no-op** (index `n - 1`), used only by the
parallel API for agents with nothing to decide; in the AEC API it is always masked. With the default
uniform spaces every role has 33 actions (padding masked). `env.unwrapped.action_names(agent)` names
every index.

| role | actions |
|---|---|
| triage (33) | `(category * 4 + priority) * 2 + route` over (billing, shipping, technical, general) x (low, medium, high, urgent) x (resolver, escalation); routing to escalation is masked when nobody staffs the desk |
| resolver (K + 10) | `0..K-1` pick a visible slot; then `check_order_status, check_payment, initiate_refund, update_shipping, troubleshoot, reset_account, escalate_issue, respond_user, ask_customer` |
| escalation (K + 9) | `0..K-1` pick a slot of the escalation queue; then `approve_refund, engineering_fix, fraud_review, account_recovery, legal_review, respond_user, return_to_resolver, ask_customer` |

With `uniform_spaces=True` (the default) every role has the largest action count (padding always
masked, no-op last).

**Illegal actions never pay.** An action the mask forbids costs the acting agent
`rewards.illegal_action` (default -0.1, component `illegal_action`) and is **replaced by a uniformly
random legal action**, drawn from the seed's own `illegal_fallback` stream (the last of the core's
streams, so arrivals, tickets and every other stream draw exactly as before). The replacement carries
no information, so a policy that always acts illegally plays the uniformly random legal policy's game
minus the penalty on every decision: it scores below random legal play on every shipped scenario and
every Gymnasium task (`tests/test_env_illegal.py`, 20 episodes, 95 % CIs). (Up to v2 the replacement
was a good policy -- triage copied the customer's labels, a pick took slot 0 -- so mask-blind learners
learnt to hand their decisions to it.) The episode always moves on, so an unmasked or greedy policy
never stalls it. Illegal actions are counted: `info["illegal_actions"]` (the agent's, this episode)
and the episode KPIs `illegal_actions` and `illegal_action_share` (of the agents' decisions) in
`env.unwrapped.center.result().kpis`. While it plays, at the step of the illegal action that settles
it, an agent whose illegal actions are beyond chance for a policy illegal on 5 % of its decisions
(a binomial test at 0.1 %: three of three are enough) is warned about, once per environment
(`csr_marl.envs.driver.IllegalActionWarning`; on a Gymnasium task only the learner is judged),
naming the routes tested to reach 0 illegal actions: sb3-contrib's `MaskablePPO` with `action_masks()`, `csr_marl.envs.rllib.RLlibEnv` with
`mask_in_observation=True` and RLlib's `ActionMaskingTorchRLModule`, `csr_marl.train.TianshouEnv`,
`csr_marl.envs.torchrl.TorchRLEnv` (`docs/envs/illegal-actions.md`).
`strict=True` raises `csr_marl.sim.IllegalActionError` naming the legal actions instead, and changes
nothing.

Vector agents cannot write text, so their `respond_user` sends the **documented reply**
(`csr_marl.sim.responses.documented_reply`: the customer's name, the order and amount, what was done
and found, an apology when the customer is upset, no promise beyond what was done), graded by the same
rubric as a language model's reply; their `ask_customer` asks about the next topic whose fact is still
hidden (`csr_marl.sim.dialogue`). The customer's answer takes sampled time (`handle_times.tools.ask_customer`)
and never counts as a workflow step; asking about a topic again costs `step_wasted` and sentiment.

## Rewards

Components come from the scenario's `rewards:` and `manager:` blocks. *Shaping*: classification,
priority, routing (a correct send-back only undoes the misroute's cost), step (needed or wasted tool),
illegal_action, response (`rewards.response_quality` x the reply's grade, 0.0-0.5, to the agent whose
`respond_user` closed the ticket; the grade's parts are in the language interface's
`info["reply_grade"]`). *Priced* (`rewards.pricing: manager`): resolution (by tier), waiting (per
ticket-minute), abandonment and sla_breach (by priority x tier), staff_time (per handled minute, by
role) and damage, each the manager's rate x `rewards.score_scale`: over a day they sum to
`score_scale` x the manager's score (`csr_marl.analysis.manager_score`). The core attributes each to
the agent responsible; waiting, abandonment and breaches found at the horizon are team-wide. `rewards.mode`:

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

`action_mask`; `decision_due` (the agent has a decision to take now); `sim_time` (minutes);
`time_since_last_decision` (minutes since the agent's own last decision, for semi-MDP discounting);
`reward_components`; `illegal_actions` (the agent's illegal actions so far this episode).

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

`csr_marl.env(scenario="standard_day", seed=None, render_mode=None, *, overrides=None,
uniform_spaces=True, flat_observations=True, strict=False, decision_interval_minutes=None, turns=None,
max_cycles=None)`; `parallel_env` takes the same but `turns`.

* `scenario`: a name (`csr_marl.config.scenario_names()`, e.g. `tasks/classify`), a YAML path, or a
  loaded `Scenario`.
* `seed`: the seed of the first `reset()` without one. `reset(seed=s)` seeds the core exactly as
  `csr_marl.simulate(scenario, seed=s)` does; later seedless resets draw their seeds from `s`.
* `render_mode`: `"ansi"` (`render()` returns the floor as text) or `"human"` (printed every step).
* `overrides`: dotted-path scenario overrides, e.g. `{"horizon_minutes": 60, "rewards.mode": "mixed"}`.
* `uniform_spaces`: one observation and one action space for every role, with a role one-hot (default);
  `False` gives each role its own sizes (triage 111 / 33, resolver and desk 176 / 14 and 13).
* `flat_observations`: the observation is the float32 `Box` and the mask is `info["action_mask"]`
  (default); `False` gives `Dict(observation=Box, action_mask=Box(int8))`, the mask in both places.
* `strict`: an illegal action raises instead of costing the penalty and being replaced.
* `decision_interval_minutes`: `None` (event-driven parallel steps, the AEC env's contact center) or
  the length of the parallel API's (and cyclic turns') decision epochs, at least 1e-6 minutes.
* `turns`: `"event"` (one turn per decision) or `"cycle"` (every agent once per parallel step); AEC only.
* `max_cycles`: truncate every agent after that many parallel steps (or cycles of turns); `None`:
  run to the horizon.

`env()` wraps `raw_env()` in `csr_marl.envs.checked.CheckedAEC`: an `OrderEnforcingWrapper` that also
makes `AssertOutOfBoundsWrapper`'s check, the checks and errors of PettingZoo's two standard wrappers in
one layer whose AEC loop calls (`agent_iter`, `last`, `step`) reach the environment directly (the two
layers' attribute chains cost more per step than the observation).

## Why these defaults

Decided against each library's own code, as installed (pettingzoo 1.27, tianshou 2.0.1, torchrl
0.14.1, supersuit 3.11 + stable-baselines3 / sb3-contrib 2.9.2, ray[rllib] 2.60):

* **Mask in `info`, observation a `Box`.** TorchRL's `PettingZooWrapper(use_mask=True)` fills the mask
  from `info` and fails on a second copy inside a Dict observation; RLlib's default encoders, SB3's
  `MlpPolicy` through SuperSuit and AgileRL want a `Box`. PettingZoo's own tests read the mask from the
  observation Dict or from `info`, so they take either. Tianshou reads it from the observation only:
  `csr_marl.train.TianshouEnv` reads `info`.
* **Uniform spaces.** Tianshou's `PettingZooEnv`, SuperSuit's vector env and the SB3 tutorial's
  wrappers refuse agents whose spaces differ; SuperSuit's padding cannot pad a Dict.
* **Illegal actions cost a penalty and are replaced, never raise.** RLlib's env pre-check, SB3's
  `check_env` and PPO, TorchRL's random rollouts and PettingZoo's `parallel_api_test`, `state_test` and
  `max_cycles_test` sample without masks. A replacement rather than "the decision stays pending"
  because a greedy unmasked policy would then repeat the same illegal action for ever at the same sim
  time; a *random* legal one, so that the replacement is never worth more than a legal choice.
* **`rewards`, `_cumulative_rewards`, `infos` behave as plain dicts**: PettingZoo's
  `TerminateIllegalWrapper` and SuperSuit's reward wrappers write into them (what a wrapper writes is
  seen until the next step and never reaches the core's books).
* **Event-driven parallel steps** so that the parallel API is the same contact center as the AEC
  API (v1-v2's 1-minute epochs throttled triage: first-response service level 0.219 against 0.873
  on `standard_day`, 20 seeds); epochs stay available for those who want batching and accept their
  distortion.

## Gymnasium tasks and Tianshou

`import csr_marl.envs` registers single-agent Gymnasium tasks (`csr_marl.envs.tasks`:
`csr_marl/Classify-v4`, `Resolve-v4`, `Triage-v4`, `Resolver-v4`, `EscalationDesk-v4`): one staff
member learns while built-in policies run the others; `action_masks()` serves sb3-contrib's
`MaskablePPO`. `csr_marl.train.TianshouEnv` is Tianshou's `PettingZooEnv` with every reward credited
to the agent that earned it (Tianshou's own credits only what an agent earned during its own turn).

## Vectorised rollouts

`csr_marl.envs.vector` runs N copies in worker processes for RL collection, several copies per worker
stepped per message through shared memory: `TaskVectorEnv("Resolver-v4", num_envs=16, workers=2)` is a
Gymnasium `VectorEnv` over a task (same-step autoreset, masks in `infos["action_mask"]` and
`action_masks()`), `ParallelVectorEnv(num_envs=16, workers=2)` batches the parallel API as arrays of
shape `(num_envs, n_agents, ...)`. `reset(seed=s)` seeds copy `i` with `s + i`: results do not depend
on the number of workers. Scaling: `benchmarks/vector_scaling.py`.

## Usage

    import numpy as np, csr_marl
    env = csr_marl.env("standard_day", seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        legal = np.flatnonzero(info["action_mask"])
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
* v1: defaults that RL libraries take as they come (first-day scripts of PettingZoo's tests, Tianshou,
  TorchRL, SuperSuit + SB3, RLlib failed or needed workarounds with v0's): uniform spaces and flat `Box`
  observations with the mask in `info` by default (v0's layouts: `uniform_spaces=False`,
  `flat_observations=False`); an illegal action costs `rewards.illegal_action` (now -0.1 by default)
  and takes the decision's fallback (v0 raised, or with a penalty kept the decision pending; v0's
  raising is `strict=True`); the parallel API runs decision epochs (v0: one decision per step, 13 of 14
  samples forced no-ops on `standard_day`); `info["decision_due"]`; `max_cycles` and cyclic AEC turns;
  registered with PettingZoo's and Gymnasium's registries; Gymnasium single-agent tasks;
  `csr_marl.train.TianshouEnv`.
* v2: customers who talk and feel: `ask_customer` is the last tool of resolvers and the
  desk (resolver K + 10, desk K + 9 actions; the uniform space stays `Discrete(33)`); the ticket block
  gains `customer_sentiment` and `questions_asked` (uniform observation 181, was 179); the reward
  component `response` grades every reply; customers' sentiment feeds patience and reopening
  (`customers.sentiment`, off in the validation presets). Gymnasium tasks are `-v1` for the same spaces.
  Later in v2 (same spaces, observations, rewards and infos, to the bit): `env()` makes PettingZoo's
  order and bounds checks in one layer (`CheckedAEC`) instead of two wrappers.
* v3 (Gymnasium tasks `-v2`): RL results that mean what they say. The parallel API is
  event-driven by default, the AEC env's contact center (v2: 1-minute decision epochs; those are
  `decision_interval_minutes=1.0`); intervals below 1e-6 minutes are refused. An illegal action is
  replaced by a uniformly random legal action from the new `illegal_fallback` stream (v2: the
  decision's informed fallback, which a mask-blind learner could exploit); illegal actions are counted
  in `info["illegal_actions"]` and the KPIs `illegal_actions` / `illegal_action_share`, and a high
  share warns once. Spaces and observations are v2's. The v2 ids (and the tasks' `-v1`) are no longer
  registered: Gymnasium names the new version when an old one is asked for.
* v4 (Gymnasium tasks `-v3`): rewards only the work earns. A wrong triage category or
  route costs `right x p / (1 - p)`, `p` the share of tickets the chosen label is right for, so a
  label chosen without reading earns nothing on average (`rewards.labels_against_chance`; v3: a wrong
  category earned 0 and a wrong route `routing_wrong`); a refund the case does not owe costs
  `rewards.collateral_damage` (-0.3; v3: a wasted step's -0.1); the reply rubric grades reading (the
  `response` component of a premature or copied reply is lower). Spaces and observations are v3's;
  the v3 ids (tasks `-v2`) are no longer registered.
* v5 (Gymnasium tasks `-v4`): a team reward priced as the manager's score (`rewards.pricing: manager`,
  the default). Resolutions are worth `manager.resolution_value` by tier; SLA breaches (now also when a
  customer hangs up), abandonment and waiting cost `manager` amounts x priority weight x tier weight;
  the new components `staff_time` (each handled staff-minute at its role's rate, the desk's dearer) and
  `damage` (a refund not owed, which v4 booked under `step`, and specialist work a case did not need),
  all x `rewards.score_scale`. A correct `return_to_resolver` only undoes the routing cost of the
  misroute that sent the ticket to the desk (v4: +0.2 on its own). Returns are not comparable with
  v4's; the tasks' own scenarios keep the seeds' scale (`pricing: flat`). Spaces and observations are
  v4's; the v4 ids (tasks `-v3`) are no longer registered.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

from ..sim.rewards import COMPONENTS as REWARD_COMPONENTS
from .aec import ContactCenterAEC
from .checked import CheckedAEC
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
    """The AEC environment with PettingZoo's standard checks (``OrderEnforcingWrapper`` and
    ``AssertOutOfBoundsWrapper``'s, in one layer: :class:`~csr_marl.envs.checked.CheckedAEC`);
    arguments as :func:`raw_env`."""
    return CheckedAEC(raw_env(scenario, seed, render_mode, **options))


def _register() -> None:
    """The multi-agent environments in PettingZoo's registry (where the installed version has one)
    and the single-agent tasks in Gymnasium's: ``import csr_marl.envs`` is enough."""
    register_tasks()
    try:
        from pettingzoo import aec_registry, parallel_registry, register
    except ImportError:  # PettingZoo before 1.27 has no registry
        return
    if "csr_marl/ContactCenter-v5" not in aec_registry:
        register("aec", "csr_marl/ContactCenter-v5", entry_point=env)
    if "csr_marl/ContactCenter-v5" not in parallel_registry:
        register("parallel", "csr_marl/ContactCenter-v5", entry_point=parallel_env)


_register()

__all__ = [
    "DEFAULT_DECISION_INTERVAL",
    "METADATA",
    "REWARD_COMPONENTS",
    "TASKS",
    "TURNS",
    "CenterTaskEnv",
    "CheckedAEC",
    "ContactCenterAEC",
    "ContactCenterParallel",
    "env",
    "parallel_env",
    "raw_env",
]
