"""Scores only the work earns: the adversarial suite on every named task and the default text day, the
same episodes over a real ``csr-marl serve``, the hand-off through GRPO's ``environment_factory``, and
the RL team reward's triage and hand-off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from csr_marl import load_scenario
from csr_marl.policies.base import make_policy
from csr_marl.sim.center import ContactCenter
from csr_marl.sim.decisions import Phase, encode_triage
from csr_marl.sim.tickets import Refund, amount_on_record, refund_owed, refund_verdict
from csr_marl.text.adaptive import FAST_BLOCKS, play_reply, search
from csr_marl.text.adversarial import (
    DEFAULT_DAY, SUITE, missed_targets, paired, reset_options, run_suite, suite_session,
)
from csr_marl.text.scoring import DAMAGE_GRADE
from csr_marl.text.scripted import play
from csr_marl.text.tasks import GRPO_TASKS, task_session

TASKS = (*GRPO_TASKS, DEFAULT_DAY)
SEEDS = range(20)
#: The page's held-out seeds: the targets are judged on paired intervals over 40 customers.
TARGET_SEEDS = range(40)


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("adversarial")


def assert_targets(run, task: str) -> None:
    """The adversarial page's targets, on paired differences (``missed_targets``), and the ladder."""
    mean = {policy: run.mean(task, policy) for policy in SUITE}
    assert mean["idle"] < mean["spam"] < mean["boilerplate"] < mean["careful"], (task, mean)
    assert not missed_targets(run, task), (task, missed_targets(run, task))


def assert_adaptive_below_boilerplate(task: str, blocks=FAST_BLOCKS, held_out=range(10)) -> None:
    """The adaptive adversary, searched on training seeds, scores below boilerplate on held-out ones: the
    paired interval below 0, or exactly boilerplate's score on every seed (no shortcut found)."""
    found = search(task, range(1000, 1003), blocks, beam=2, rounds=4)
    session = suite_session(task)
    adaptive = [play_reply(session, found.blocks, seed) for seed in held_out]
    boilerplate = [play(session, "boilerplate", seed, max_calls=400).score for seed in held_out]
    assert adaptive == boilerplate or paired(adaptive, boilerplate)[2] < 0, (task, found, adaptive, boilerplate)


@pytest.mark.parametrize("task", ["tasks/payment_failure", "tasks/order_status", "tasks/ticket_resolve"])
def test_the_adaptive_adversary_finds_no_reply_above_boilerplate(task: str) -> None:
    """A search over replies that never read a lookup (guessed findings, denials, category lists,
    guessed dates, the name and an apology) finds nothing above boilerplate (fails on scoring v2: a
    guessed finding paid; on ticket_resolve, fails against v3's canned yardstick: the name and thanks
    beat it on tickets that need no lookup)."""
    assert_adaptive_below_boilerplate(task)


@pytest.mark.parametrize("policy", ["deny_findings", "category_list", "dialogue_echo"])
def test_denying_listing_and_echoing_replies_score_below_boilerplate(policy: str) -> None:
    """The replies that deny every finding, list the declared category's findings, or quote the
    customer's answers back (fails on scoring v2: the denying reply scored 0.92-0.95 there)."""
    run = run_suite(["tasks/payment_failure", "tasks/order_status"], range(10), policies=("boilerplate", policy))
    for task in ("tasks/payment_failure", "tasks/order_status"):
        assert run.mean(task, policy) < run.mean(task, "boilerplate") - 0.05, (task, policy, run.scores)


@pytest.mark.parametrize("task", ["tasks/payment_failure", "tasks/ticket_classify"])
def test_no_shortcut_beats_boilerplate_on_the_seeds_tasks(task: str) -> None:
    """The issue's worst cases (hand-off on payment_failure, free labels on ticket_classify): every fixed
    adversary below boilerplate with the paired interval below 0, careful at least 0.85 and 0.25 above
    them (fails on scoring v3: refunding every ticket of payment_failure was not significantly below
    boilerplate, its unowed refunds clipped at 0)."""
    assert_targets(run_suite([task], TARGET_SEEDS), task)


def test_refunding_every_ticket_scores_below_doing_nothing() -> None:
    """An unowed refund grades its ticket -1, below 0 (fails on scoring v3, which clipped the episode at 0):
    refunding every ticket of tasks/refund scores below idle, and the episode is -1 where none was owed."""
    run = run_suite(["tasks/refund"], range(10), policies=("idle", "refund_everything"))
    session = task_session("tasks/refund")
    owed = []
    for seed in range(10):
        session.reset(seed=seed)
        owed.append(refund_owed(session.decision.ticket))
    everything = run.scores[("tasks/refund", "refund_everything")]
    assert run.mean("tasks/refund", "refund_everything") < run.mean("tasks/refund", "idle") == 0.0, everything
    assert all(score == DAMAGE_GRADE for score, due in zip(everything, owed) if not due) and not all(owed), everything


@pytest.fixture(scope="module")
def every_task_run():
    return run_suite(TASKS, TARGET_SEEDS)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_no_shortcut_beats_boilerplate_on_any_task(every_task_run, task: str) -> None:
    assert_targets(every_task_run, task)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_the_adaptive_adversary_finds_nothing_above_boilerplate_on_any_task(task: str) -> None:
    assert_adaptive_below_boilerplate(task, blocks=None, held_out=SEEDS)


@pytest.mark.slow
def test_the_server_scores_every_episode_as_the_process_does(tmp_path: Path) -> None:
    """Every episode's calls sent through the project's client to ``csr-marl serve``: the same scores."""
    pytest.importorskip("openenv", reason="needs the serve extra: pip install -e '.[serve]'")
    from serve_helpers import running_server

    from csr_marl.serve.replay import replay_episodes

    run = run_suite(TASKS, range(5))
    with running_server(tmp_path / "server.log") as served:
        served_scores = replay_episodes(served.url, run.calls, reset_options)
    differ = {key: score for key, score in served_scores.items() if score != run.scores[key[:2]][key[2]]}
    assert not differ and len(served_scores) == len(TASKS) * len(SUITE) * 5, differ


def test_handing_off_through_environment_factory_scores_at_most_boilerplate() -> None:
    """GRPO's tool environment, the issue's fixed rollout: ``check_payment(); escalate_issue("x")``,
    which ignores the ticket."""
    from csr_marl.grpo.environment import environment_factory

    make = environment_factory("tasks/payment_failure")
    handoff = []
    for seed in SEEDS:
        env = make()
        env.reset(task="tasks/payment_failure", seed=seed)
        env.check_payment()
        env.escalate_issue(reason="x")
        handoff.append(env.get_reward())
    boilerplate = run_suite(["tasks/payment_failure"], SEEDS, policies=("boilerplate",)).scores[
        ("tasks/payment_failure", "boilerplate")
    ]
    assert np.mean(handoff) <= np.mean(boilerplate), (np.mean(handoff), np.mean(boilerplate))
    # Only where the ticket's truth needs the desk (suspected fraud) is the lookup-then-escalate the work.
    needs_desk = []
    for seed in SEEDS:
        session = task_session("tasks/payment_failure")
        session.reset(seed=seed)
        needs_desk.append(session.decision.ticket.requirement.needs_escalation)
    assert all(score < 0.5 for score, needs in zip(handoff, needs_desk) if not needs), handoff


@pytest.mark.parametrize("task", ["tasks/ticket_classify", "tasks/ticket_resolve", "tasks/order_status"])
def test_unusable_calls_earn_nothing_from_the_fallback(task: str) -> None:
    """A player whose every call is refused (an unknown tool) never earns the fallback's labels: the
    triage fallback passes on the customer's own, right three times in four (found by the local
    model's baseline, which scored 1.0 on ticket_classify without one usable call)."""
    session = task_session(task)
    scores = []
    for seed in range(10):
        session.reset(seed=seed)
        for _ in range(200):
            if session.step("no_such_tool", {}).done:
                break
        assert session.decision is None, "the episode ends: refusals lead to the fallback, never a hang"
        scores.append(session.score)
    idle = run_suite([task], range(10), policies=("idle",)).scores[(task, "idle")]
    assert max(scores) <= 0.25 and np.mean(scores) <= np.mean(idle) + 0.05, (scores, idle)


def test_a_refund_is_checked_against_the_amount_on_record() -> None:
    session = task_session("tasks/refund")
    for seed in SEEDS:
        session.reset(seed=seed)
        ticket = session.decision.ticket
        owed = amount_on_record(ticket)
        verdicts = {refund_verdict(ticket, refund) for refund in (None, Refund(owed), Refund(owed + 0.005))}
        if verdicts == {"not_due"}:
            continue
        assert verdicts == {"right"}
        assert refund_verdict(ticket, Refund(0.0)) == refund_verdict(ticket, Refund(1e6)) == "wrong_amount"
        order = ticket.slot_values.get("order_id") or ticket.slot_values.get("invoice_id")
        if order:
            assert refund_verdict(ticket, Refund(owed, f"#{order}")) == "right"
            assert refund_verdict(ticket, Refund(owed, "1234567890")) == "wrong_order"


def test_a_refund_not_owed_costs_more_than_a_missed_step() -> None:
    scenario = load_scenario("tasks/refund")
    weights = scenario.rewards
    assert weights.collateral_damage < -weights.step_needed < 0


# --- the RL team reward ---------------------------------------------------------------------------
def test_a_blind_label_earns_nothing_on_average_in_the_rl_reward() -> None:
    """Chance-corrected triage: for every constant category and route, the expected reward over the
    scenario's ticket mix is zero."""
    center = ContactCenter(load_scenario("tasks/classify"), seed=0)
    categories, routes = center.factory.label_shares()
    odds = center._label_odds()
    w = center.scenario.rewards
    for shares, label_odds, pay in ((categories, odds[0], w.classification_right), (routes, odds[1], w.routing_right)):
        assert abs(sum(shares.values()) - 1.0) < 1e-9
        for chosen in shares:
            expected = sum(p * (pay if truth == chosen else -pay * label_odds[chosen]) for truth, p in shares.items())
            assert abs(expected) < 1e-9, (chosen, expected)


def _triage_reward_per_ticket(policy: str, seed: int) -> float:
    scenario = load_scenario("tasks/classify", overrides={"horizon_minutes": 240})
    center = ContactCenter(scenario, seed=seed)
    center.rewards.track_entries = True
    heuristic = make_policy("heuristic_full", scenario, np.random.default_rng(seed))
    total, triaged = 0.0, 0
    while (decision := center.next_decision()) is not None:
        action = heuristic(decision)
        if decision.phase is Phase.TRIAGE:
            triaged += 1
            if policy == "constant":
                action = encode_triage("general", "low", "resolver")
        center.decide(action if action in decision.legal else decision.legal[0])
        total += sum(v for part, agent, v in center.rewards.drain()
                     if part in ("classification", "routing") and agent and agent.startswith("triage"))
    return total / triaged


def test_constant_labels_earn_about_nothing_of_the_rl_triage_reward() -> None:
    constant = np.mean([_triage_reward_per_ticket("constant", seed) for seed in range(3)])
    reading = np.mean([_triage_reward_per_ticket("reading", seed) for seed in range(3)])
    assert abs(constant) < 0.02 < 0.15 < reading, (constant, reading)


def test_handing_every_ticket_to_the_desk_does_not_pay_the_rl_team() -> None:
    """Resolvers that escalate instead of replying: the desk's work is not theirs, and the team loses."""
    def team_return(handoff: bool, seed: int) -> float:
        scenario = load_scenario("standard_day", overrides={"horizon_minutes": 120})
        center = ContactCenter(scenario, seed=seed)
        heuristic = make_policy("heuristic", scenario, np.random.default_rng(seed))
        while (decision := center.next_decision()) is not None:
            action = heuristic(decision)
            if handoff and decision.phase is Phase.WORK and decision.role == "resolver" and decision.tool(action) == "respond_user":
                action = next((a for a in decision.legal if decision.tool(a) == "escalate_issue"), action)
            center.decide(action)
        return center.result().team_return

    for seed in range(2):
        assert team_return(True, seed) < team_return(False, seed)


def test_the_macro_reads_nothing_a_lookup_found_and_names_what_was_done() -> None:
    """Boilerplate's reply (the yardstick) is the same whatever the lookups revealed, and it names the
    customer: on a ticket that needs no lookup it grades as the documented reply does."""
    from csr_marl.sim.responses import documented_reply, grade_reply, macro_reply
    from csr_marl.text.scripted import heuristic_chooser

    session = task_session("tasks/ticket_resolve")
    closed = []
    for seed in range(6):
        turn = session.reset(seed=seed)
        choose = heuristic_chooser(session, seed, lambda d: closed.append(d.ticket) or macro_reply(d.ticket), True)
        while turn is not None:
            turn = session.step(*choose(session.decision, 0)).turn
    no_lookup = 0
    for ticket in closed:
        macro = macro_reply(ticket)
        revealed, details = dict(ticket.revealed), dict(ticket.details)
        ticket.revealed.clear()
        ticket.details.clear()
        try:
            assert macro_reply(ticket) == macro and ticket.customer in macro
        finally:
            ticket.revealed.update(revealed)
            ticket.details.update(details)
        if not ticket.revealed and ticket.resolvable():
            no_lookup += 1
            assert grade_reply(ticket, macro).score >= grade_reply(ticket, documented_reply(ticket)).score - 1e-9
    assert closed and no_lookup, (len(closed), no_lookup)
