"""Generated scenarios and the properties every run must keep (shared by the fuzz test and its long run).

A case is a shipped scenario as a base, random overrides across the whole schema (arrivals, customers,
staffing with shifts, handle times, service level, SLAs, rewards, observation, workflow), a policy and
an API (the core alone, the AEC env, the parallel env). ``check_case`` runs it and asserts:

* loading either succeeds or fails with one ``ScenarioError`` line naming a field;
* no exception while running, and the run ends within a decision cap and a wall-clock limit;
* conservation: ``arrived == resolved + abandoned + closed_unresolved + in_system``;
* every KPI is a non-negative number (NaN only for a ratio with nothing to divide), rates and shares
  lie in [0, 1], counts are whole numbers;
* in the envs, every observation lies inside its space and the acting agent's mask is exactly the
  core's legal actions.
"""

from __future__ import annotations

import math
import signal
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
from hypothesis import strategies as st

import csr_marl
from csr_marl.config import ScenarioError, load_scenario
from csr_marl.whatif.records import natural_range

BASES = tuple(csr_marl.scenario_names())
POLICIES = ("heuristic", "random", "fifo", "escalate_all")
APIS = ("simulate", "aec", "parallel")
TOOLS = ("check_order_status", "check_payment", "initiate_refund", "respond_user", "escalate_issue", "troubleshoot")
MAX_DECISIONS = 60_000
SECONDS_PER_CASE = 20
COUNTS = ("offered", "answered", "resolved", "abandoned", "closed_unresolved", "escalated", "reopened", "in_system_at_end")

means = st.one_of(st.floats(1e-3, 1.0), st.floats(1.0, 30.0), st.floats(30.0, 1e4))


@st.composite
def distributions(draw: st.DrawFn) -> dict[str, Any]:
    family = draw(st.sampled_from(["exponential", "lognormal", "gamma", "deterministic", "empirical"]))
    if family == "empirical":
        values = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 50.0)), min_size=1, max_size=4))
        return {"dist": family, "values": values}
    spec: dict[str, Any] = {"dist": family, "mean_minutes": draw(means)}
    if family in ("lognormal", "gamma"):
        spec["cv"] = draw(st.one_of(st.floats(0.05, 3.0), st.floats(3.0, 1000.0)))
    return spec


@st.composite
def arrivals(draw: st.DrawFn, horizon: float) -> dict[str, Any]:
    kind = draw(st.sampled_from(["rate", "profile", "surges"]))
    if kind == "profile":
        cuts = sorted(draw(st.lists(st.floats(0.01, horizon), max_size=3, unique=True)))
        rates = draw(st.lists(st.floats(0.0, 300.0), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
        if max(rates) <= 0:
            rates[0] = 30.0
        return {"profile": [[0.0, rates[0]], *([c, r] for c, r in zip(cuts, rates[1:]))]}
    spec: dict[str, Any] = {"rate_per_hour": draw(st.one_of(st.floats(0.5, 300.0), st.floats(300.0, 3000.0)))}
    if kind == "surges":
        surges = []
        for _ in range(draw(st.integers(1, 3))):
            start = draw(st.floats(0.0, horizon))
            # Tall surges are short: extreme rates, but a bounded amount of work (the guard refuses
            # more than 20 million expected tickets; a case here must finish in seconds).
            tall = draw(st.booleans())
            width = draw(st.floats(1e-6, 0.01) if tall else st.floats(0.01, horizon))
            multiplier = draw(st.floats(5.0, 1e6) if tall else st.floats(0.01, 5.0))
            surges.append({"start_minute": start, "end_minute": start + width, "multiplier": multiplier})
        spec["surges"] = surges
    return spec


@st.composite
def staffing(draw: st.DrawFn, horizon: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "triage": draw(st.integers(0, 3)), "resolver": draw(st.integers(0, 5)), "escalation": draw(st.integers(0, 2)),
    }
    times = sorted(draw(st.lists(st.floats(0.0, horizon * 1.2), max_size=3, unique=True)))
    shifts = []
    for at in times:
        change: dict[str, Any] = {"at_minute": at}
        for role in ("triage", "resolver", "escalation"):
            if draw(st.booleans()):
                change[role] = draw(st.integers(0, 4))
        shifts.append(change)
    if shifts:
        spec["shifts"] = shifts
    return spec


@st.composite
def tier_mix(draw: st.DrawFn) -> dict[str, float]:
    weights = draw(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3))
    total = sum(weights)
    if total <= 0:
        return {"basic": 1.0, "premium": 0.0, "enterprise": 0.0}
    shares = [w / total for w in weights]
    return {"basic": 1.0 - shares[1] - shares[2], "premium": shares[1], "enterprise": shares[2]}


@st.composite
def overrides(draw: st.DrawFn) -> dict[str, Any]:
    """Dotted-path overrides over the whole schema; valid by construction most of the time."""
    horizon = draw(st.one_of(st.floats(1.0, 60.0), st.floats(60.0, 240.0)))
    out: dict[str, Any] = {"horizon_minutes": horizon, "warmup_minutes": draw(st.floats(0.0, horizon * 0.5))}
    if draw(st.booleans()):
        out["max_tickets"] = draw(st.integers(1, 300))
    optional = {
        "arrivals": arrivals(horizon),
        "staffing": staffing(horizon),
        "customers.tier_mix": tier_mix(),
        "customers.patience": st.one_of(st.none(), distributions()),
        "customers.reopen": st.fixed_dictionaries({
            "probability": st.floats(0.0, 1.0), "max_returns": st.integers(0, 3), "delay": distributions(),
        }),
        "handle_times.triage": distributions(),
        "handle_times.default_tool": distributions(),
        "handle_times.tools": st.dictionaries(st.sampled_from(TOOLS), distributions(), max_size=3),
        "service_level.threshold_minutes": st.floats(0.01, 60.0),
        "sla_minutes": st.fixed_dictionaries({p: st.floats(0.5, 1e4) for p in ("low", "medium", "high", "urgent")}),
        "rewards.mode": st.sampled_from(["shared", "individual", "mixed"]),
        "rewards.abandonment": st.floats(-5.0, 5.0),
        "rewards.resolution": st.floats(-5.0, 5.0),
        "rewards.waiting_per_minute.urgent": st.floats(-1.0, 0.0),
        "rewards.illegal_action": st.floats(-1.0, 0.0),
        "observation.queue_slots": st.integers(1, 8),
        "workflow.max_actions_per_ticket": st.integers(1, 15),
        "workflow.max_transfers_per_ticket": st.integers(0, 8),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    if draw(st.integers(0, 9)) == 0:  # now and then a value validation must refuse
        key, bad = draw(st.sampled_from([
            ("horizon_minutes", float("inf")), ("rewards.sla_breach", float("nan")), ("staffing.resolver", -1),
            ("customers.tier_mix", {"basic": 0.5}), ("arrivals.rate_per_hour", 1e12),
            ("handle_times.default_tool", {"dist": "gamma", "mean_minutes": 1.0, "cv": 0.0}),
        ]))
        out[key] = bad
    return out


cases = st.tuples(st.sampled_from(BASES), overrides(), st.sampled_from(POLICIES), st.sampled_from(APIS),
                  st.integers(0, 2**31 - 1))


class CaseTimeout(AssertionError):
    """A case ran past its wall-clock limit: a hang on a value that validation accepted."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(_signum: int, _frame: Any) -> None:
        raise CaseTimeout(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_case(base: str, changes: dict[str, Any], policy: str, api: str, seed: int) -> str:
    """Run one case and assert every property; returns ``"refused"`` or ``"ran"``."""
    try:
        scenario = load_scenario(base, changes)
    except ScenarioError as error:
        message = str(error)
        assert "\n" not in message and ":" in message, f"not one line naming a field: {message!r}"
        return "refused"
    with time_limit(SECONDS_PER_CASE):
        if api == "simulate":
            result = csr_marl.simulate(scenario, policy=policy, seed=seed)
        elif api == "aec":
            result = _run_aec(scenario, seed)
        else:
            result = _run_parallel(scenario, seed)
    _check_result(result)
    return "ran"


def _check_result(result: Any) -> None:
    flow = result.flow
    assert flow["arrived"] >= flow["resolved"] + flow["abandoned"] + flow["closed_unresolved"] >= 0, flow
    kpis = result.kpis
    for name, value in kpis.items():
        assert not math.isinf(value), f"{name} = {value}"
        if math.isnan(value):
            assert name not in COUNTS, f"{name} is NaN"
            continue
        low, high = natural_range(name)  # [0, 1] for shares, [-1, 1] for sentiment, [0, inf) else
        assert low <= value <= high, f"{name} = {value}"
        if name in COUNTS:
            assert value == int(value), f"{name} = {value}"
    # KPIs count contacts after the warm-up; the flow counts every ticket.
    assert kpis["in_system_at_end"] <= flow["arrived"] - flow["resolved"] - flow["abandoned"] - flow["closed_unresolved"]
    assert kpis["offered"] <= flow["arrived"]
    assert math.isfinite(result.team_return), result.team_return


def _run_aec(scenario: Any, seed: int) -> Any:
    env = csr_marl.raw_env(scenario)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    decisions = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(observation), f"{agent}: observation outside its space"
        if terminated or truncated:
            env.step(None)
            continue
        decisions += 1
        assert decisions < MAX_DECISIONS, "too many decisions"
        mask = np.asarray(info["action_mask"])
        decision = env.pending_decision
        assert decision is not None and decision.agent == agent
        assert set(np.flatnonzero(mask).tolist()) == set(decision.legal), f"{agent}: mask != core's legal actions"
        env.step(_sampled(rng, mask))
    return env.center.result()


def _sampled(rng: np.random.Generator, mask: np.ndarray) -> int:
    """Mostly a legal action; one in five drawn from the whole space, as unmasked learners do."""
    if rng.random() < 0.2:
        return int(rng.integers(len(mask)))
    return int(rng.choice(np.flatnonzero(mask)))


def _run_parallel(scenario: Any, seed: int) -> Any:
    env = csr_marl.parallel_env(scenario, decision_interval_minutes=(0.1, 1.0, 5.0)[seed % 3])
    observations, infos = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps = 0
    while env.agents:
        steps += 1
        assert steps < MAX_DECISIONS, "too many parallel steps"
        actions = {}
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation), f"{agent}: observation outside its space"
            mask = np.asarray(infos[agent]["action_mask"])
            actions[agent] = _sampled(rng, mask)
        for agent, decision in env.due_decisions.items():
            acting = np.flatnonzero(np.asarray(infos[agent]["action_mask"])).tolist()
            assert set(acting) == set(decision.legal), f"{agent}: mask != core's legal actions"
        observations, _, _, _, infos = env.step(actions)
    return env.center.result()
