"""Customers who talk and feel: sentiment, its feedback into the queues, ask_customer, graded replies."""

from __future__ import annotations

import math

import numpy as np
import pytest

import csr_marl
from csr_marl.config import load_scenario
from csr_marl.policies import make_policy
from csr_marl.sim import ContactCenter, Phase
from csr_marl.text import TextSession

SHORT = {"horizon_minutes": 120}


def _center(overrides: dict | None = None, seed: int = 0) -> ContactCenter:
    return ContactCenter(load_scenario("standard_day", overrides={**SHORT, **(overrides or {})}), seed=seed)


def test_sentiment_falls_with_waiting_and_wasted_steps_and_is_clamped() -> None:
    center = _center()
    model, config = center.customers, center.scenario.customers.sentiment
    ticket = center.factory.new(0.0)
    assert ticket.sentiment == 0.0
    model.waited(ticket, 10.0)
    assert ticket.sentiment == pytest.approx(-10 * config.wait_per_minute)
    model.wasted_step(ticket)
    assert ticket.sentiment == pytest.approx(-10 * config.wait_per_minute - config.wasted_step)
    model.waited(ticket, 10_000.0)
    assert ticket.sentiment == -1.0


def test_an_upset_customer_is_less_patient_after_a_handover_and_comes_back_more_often() -> None:
    center = _center()
    model, config = center.customers, center.scenario.customers.sentiment
    ticket = center.factory.new(0.0)
    ticket.patience_left = 20.0
    ticket.sentiment = -0.4
    model.handed_over(ticket)
    assert ticket.sentiment == pytest.approx(-0.4 - config.handover)
    assert ticket.patience_left == pytest.approx(20.0 * math.exp(config.patience_elasticity * ticket.sentiment))
    assert model.reopen_probability(ticket, 0.5) == pytest.approx(0.5 * (1 + config.reopen_elasticity * 0.5))
    ticket.sentiment = 0.8
    assert model.reopen_probability(ticket, 0.5) < 0.5


def test_with_sentiment_off_nothing_is_tracked_or_fed_back() -> None:
    center = _center({"customers.sentiment.enabled": False})
    model = center.customers
    ticket = center.factory.new(0.0)
    ticket.patience_left = 20.0
    model.waited(ticket, 30.0)
    model.handed_over(ticket)
    assert ticket.sentiment == 0.0 and ticket.patience_left == 20.0
    assert model.reopen_probability(ticket, 0.8) == 0.8
    kpis = csr_marl.simulate("standard_day", seed=0, overrides={**SHORT, "customers.sentiment.enabled": False}).kpis
    assert math.isnan(kpis["sentiment_mean"]) and math.isnan(kpis["upset_rate"])


def test_validation_presets_run_without_sentiment_and_a_first_queue_entry_is_never_rescaled() -> None:
    for name in ("mmc", "mmc_priority", "two_tier"):
        assert not load_scenario(name).customers.sentiment.enabled
    # Erlang A with moods on: every contact enters one queue once, so the run is the same to the bit.
    erlang_a = {"customers.patience": {"dist": "exponential", "mean_minutes": 2.0}, "horizon_minutes": 200}
    off = csr_marl.simulate("mmc", seed=3, overrides=erlang_a).kpis
    on = csr_marl.simulate("mmc", seed=3, overrides={**erlang_a, "customers.sentiment.enabled": True}).kpis
    for name in ("offered", "answered", "abandoned", "p_wait", "asa_minutes", "abandonment_rate"):
        assert on[name] == off[name], name


def test_feedback_makes_a_badly_run_floor_lose_more_customers() -> None:
    """A random team leaves customers upset; with feedback they hang up sooner on later queues."""
    feedback, flat = [], []
    for seed in range(4):
        on = csr_marl.simulate("standard_day", policy="random", seed=seed, overrides=SHORT).kpis
        off = csr_marl.simulate(
            "standard_day", policy="random", seed=seed,
            overrides={**SHORT, "customers.sentiment.patience_elasticity": 0.0,
                       "customers.sentiment.reopen_elasticity": 0.0},
        ).kpis
        feedback.append(on["abandoned"])
        flat.append(off["abandoned"])
        assert on["offered"] >= off["offered"] - 10  # same arrivals; only reopened contacts differ
        assert on["upset_rate"] > 0.2 and -1.0 <= on["sentiment_mean"] < 0.0
    assert sum(feedback) > sum(flat)


def test_sentiment_is_observable_in_the_vector_and_in_the_text() -> None:
    env = csr_marl.raw_env("standard_day", seed=0, overrides=SHORT)
    env.reset(seed=0)
    names = env.feature_names("resolver_0")
    at = names.index("customer_sentiment")
    while True:
        decision = env.pending_decision
        if decision.role == "resolver" and decision.phase is Phase.WORK:
            break
        env.step(int(np.flatnonzero(env.infos[env.agent_selection]["action_mask"])[0]))
    decision.ticket.sentiment = -0.5
    assert env.observe(env.agent_selection)[at] == pytest.approx(0.25)
    session = TextSession("tasks/resolve", seed=0)
    turn = session.reset()
    while turn.phase != "work":
        turn = session.step("pick_ticket", {"ticket_id": turn.tools[0]["function"]["parameters"]["properties"]["ticket_id"]["enum"][0]}).turn
    assert "seems calm" in turn.text or "seems impatient" in turn.text


def test_asking_the_customer_gets_a_reply_in_the_story_and_a_repeat_costs() -> None:
    session = TextSession("tasks/resolve", seed=1)
    turn = session.reset()
    while turn.phase != "work":
        ids = turn.tools[0]["function"]["parameters"]["properties"]["ticket_id"]["enum"]
        turn = session.step("pick_ticket", {"ticket_id": ids[0]}).turn
    assert "ask_customer" in [tool["function"]["name"] for tool in turn.tools]
    steps = session.center.rewards.totals
    before = steps["step"]
    first = session.step("ask_customer", {"question": "Could you tell me what you see on your card statement?"})
    assert isinstance(first.info["customer_reply"], str) and first.info["customer_reply"]
    assert first.info["customer_reply"] in first.turn.text  # the reply is part of the ticket's story
    assert steps["step"] == before  # a first question is free (but takes the customer's time)
    mood = session.decision.ticket.sentiment
    again = session.step("ask_customer", {"question": "What do you see on your card statement?"})
    assert again.info["events"][0]["kind"] == "customer_reply"
    assert steps["step"] == pytest.approx(before + session.scenario.rewards.step_wasted)
    ticket = session.decision.ticket
    assert ticket.questions == ("payment", "payment") and ticket.sentiment < mood


def test_a_reply_is_graded_and_paid_as_the_response_component() -> None:
    session = TextSession("tasks/resolve", seed=2, overrides={"rewards.mode": "individual"})
    turn = session.reset()
    heuristic = make_policy("heuristic", session.scenario, np.random.default_rng(0))
    graded = None
    for _ in range(200):
        decision = session.decision
        action = heuristic(decision)
        if decision.phase is Phase.PICK:
            step = session.step("pick_ticket", {"ticket_id": decision.slots[action].id})
        elif decision.tool(action) == "respond_user":
            ticket = decision.ticket
            message = (f"Hi {ticket.customer}, thanks for your patience. I have looked into this and "
                       "taken care of it as described; please reply if anything is still wrong.")
            step = session.step("respond_user", {"message": message})
        else:
            tool = decision.tool(action)
            args = {"amount": float(decision.ticket.slot_values.get("amount", 10.0))} if "refund" in tool else {}
            step = session.step(tool, args)
        if "reply_grade" in step.info:
            graded = step.info["reply_grade"]
            break
        turn = step.turn
        assert turn is not None
    assert graded is not None
    assert 0.0 <= graded["score"] <= 0.5 and graded["message"].startswith("Hi ")
    assert set(graded["parts"]) and isinstance(graded["notes"], list)
    components = session.center.rewards.totals
    assert components["response"] > 0.0
