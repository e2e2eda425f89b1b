"""Observations carry typed fields beside the text: what a seed environment's agent reads."""

from __future__ import annotations

import sys

import pytest

from extras import need

from csr_marl.text.tasks import task_session


def test_a_turn_carries_the_ticket_as_fields_that_match_its_text() -> None:
    session = task_session("tasks/payment_failure")
    turn = session.reset(seed=2)
    ticket = turn.ticket
    assert ticket is not None and turn.queue == []
    assert f"Ticket #{ticket.ticket_id} from {ticket.customer_name}, a {ticket.tier} customer" in turn.text
    assert ticket.subject in turn.text and ticket.body in turn.text
    assert ticket.declared_category in ("billing", "shipping", "technical", "general")
    assert turn.tool_names == [tool["function"]["name"] for tool in turn.tools]
    step = session.step("check_payment", {})
    after = step.turn.ticket
    assert after.steps_done == ["check_payment"] and "payment_status" in after.facts
    assert after.history == ["resolver_0 used check_payment"]
    hidden = session.decision.ticket
    assert set(after.facts) <= set(hidden.facts)  # only revealed facts, never the hidden ones unasked


def test_a_pick_lists_the_waiting_tickets() -> None:
    session = task_session("tasks/few_tickets")
    turn = session.reset(seed=0)  # the first ticket is taken at once: it is alone in the queue
    assert turn.phase == "work" and turn.ticket.ticket_id == 0
    while turn.phase != "pick":
        turn = session.step("respond_user", {"message": "Hello, this is sorted now. Thank you!"}).turn
    assert turn.ticket is None and [view.ticket_id for view in turn.queue] == [1, 2]


def test_the_openenv_observation_has_the_same_fields() -> None:
    need("openenv")
    from csr_marl.serve.environment import ContactCenterEnvironment, SessionDefaults
    from csr_marl.serve.models import ToolCallAction

    env = ContactCenterEnvironment(SessionDefaults())
    observation = env.reset(seed=2, scenario="tasks/ticket_classify")
    assert observation.role == "triage" and observation.legal_tools == ["classify"]
    assert observation.ticket is not None and observation.ticket.customer_name in observation.text
    assert observation.score == 0.0 and not observation.terminated and not observation.truncated
    ticket = observation.ticket
    call = ToolCallAction(tool="classify", arguments={
        "category": ticket.declared_category, "priority": ticket.declared_priority, "route": "resolver",
    })
    step = env.step(call)
    assert step.done and step.terminated and not step.truncated and 0.0 <= step.score <= 1.0


def test_without_trl_the_training_helpers_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from csr_marl.grpo import GrpoUnavailable, require_grpo_extra

    monkeypatch.setitem(sys.modules, "trl", None)
    with pytest.raises(GrpoUnavailable, match=r"\.\[grpo\]"):
        require_grpo_extra()
