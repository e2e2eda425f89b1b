"""Episodes GRPO cannot game: the episode score orders idle < spam < boilerplate < careful on every
task, lies in [-1, 1], and the episode's end says whether it finished or was cut."""

from __future__ import annotations

import pytest

from csr_marl.sim.responses import documented_reply
from csr_marl.sim.tickets import amount_on_record
from csr_marl.text import NoTurnError, TextSession
from csr_marl.text.scripted import AGENTS, play
from csr_marl.text.tasks import GRPO_TASKS, task_roles, task_session

SEEDS = range(10)


def _mean_scores(task: str) -> dict[str, float]:
    session = task_session(task, seed=0)
    scores = {}
    for agent in AGENTS:
        outcomes = [play(session, agent, seed) for seed in SEEDS]
        assert all(-1.0 <= o.score <= 1.0 for o in outcomes), (agent, [o.score for o in outcomes])
        scores[agent] = sum(o.score for o in outcomes) / len(outcomes)
    return scores


@pytest.mark.parametrize("task", GRPO_TASKS)
def test_the_scripted_ladder_holds(task: str) -> None:
    """Doing nothing, stalling or a canned reply scores strictly below an honest attempt."""
    scores = _mean_scores(task)
    assert scores["idle"] == 0.0
    assert scores["idle"] < scores["spam"] < scores["boilerplate"] < scores["careful"], scores


def test_a_one_word_reply_earns_little_of_the_resolution() -> None:
    """The right steps and "ok" score well below the right steps and a reply that says what was done."""
    def by_the_book(message: str | None) -> float:
        session = task_session("tasks/payment_failure", seed=0)
        turn = session.reset(seed=1)
        step = session.step("check_payment", {})
        ticket = session.decision.ticket
        for tool in ticket.needed_steps():
            step = session.step(tool, {"amount": amount_on_record(ticket)} if "refund" in tool else {})
        step = session.step("respond_user", {"message": message or documented_reply(ticket)})
        assert step.done and step.terminated and not step.truncated and turn is not None
        return step.score

    assert by_the_book("ok") < 0.45 < 0.95 <= by_the_book(None)


def test_stalling_to_the_tool_cap_gets_no_free_reply() -> None:
    """After the tool cap the core closes the ticket for the caller: the reply says nothing."""
    session = task_session("tasks/order_status", seed=0)
    outcome = play(session, "spam", seed=0)
    record = next(iter(session._score.tickets.values()))
    assert record.closed and record.reply < 0.1 and outcome.score < 0.2


def test_truncated_is_separate_from_terminated() -> None:
    session = task_session("tasks/one_ticket", seed=0)
    outcome = play(session, "careful", seed=0)
    assert outcome.terminated and not outcome.truncated  # every ticket closed before the horizon
    outcome = play(session, "spam", seed=0, max_calls=3)
    assert outcome.truncated and not outcome.terminated  # cut by the caller's turn limit
    day = TextSession("tasks/resolve", seed=0, roles=("resolver",), overrides={"horizon_minutes": 60})
    day.reset(seed=0)
    while day.decision is not None:
        step = day.step("respond_user", {"message": "Hello, we have looked into it and it is sorted. Thanks!"})
    assert step.done and step.truncated and not step.terminated  # the shift's end is a time limit


def test_reset_returns_a_turn_or_says_why_not() -> None:
    session = task_session("tasks/one_ticket", seed=0)
    turn = session.reset(seed=0)
    assert turn.ticket is not None and turn.ticket.ticket_id == 0
    quiet = TextSession("tasks/resolve", seed=0, roles=("resolver",), overrides={"horizon_minutes": 1})
    with pytest.raises(NoTurnError, match="no ticket reached them"):
        for seed in range(20):  # one ticket every 12 minutes: a 1-minute shift is nearly always empty
            quiet.reset(seed=seed)


def test_named_tasks_play_their_roles() -> None:
    assert task_roles("tasks/ticket_classify") == ("triage",)
    assert task_session("tasks/ticket_classify").reset(seed=0).phase == "triage"
    assert task_session("tasks/ticket_resolve").reset(seed=0).role == "triage"
    assert task_session("tasks/refund").reset(seed=0).role == "resolver"
