"""The language interface: decisions as text, legal actions as tools, tool calls parsed strictly."""

from __future__ import annotations

import json

import pytest

import csr_marl
from csr_marl.sim.tickets import amount_on_record
from csr_marl.policies import HeuristicPolicy
from csr_marl.sim.decisions import Phase, decode_triage
from csr_marl.text import TextSession, ToolCallError, parse_call, tool_specs

SHORT = {"horizon_minutes": 90}
ARGUMENTS = {"respond_user": {"message": "Thanks for waiting, this is sorted now."},
             "escalate_issue": {"reason": "needs a specialist"},
             "return_to_resolver": {"reason": "no specialist needed"},
             "initiate_refund": {"amount": 84.99}, "approve_refund": {"amount": 84.99}}


def as_tool_call(decision, action: int) -> tuple[str, str]:
    """The tool call that stands for ``action`` (JSON arguments, as a chat model sends them)."""
    if decision.phase is Phase.TRIAGE:
        category, priority, route = decode_triage(action)
        return "classify", json.dumps({"category": category, "priority": priority, "route": route})
    if decision.phase is Phase.PICK:
        return "pick_ticket", json.dumps({"ticket_id": decision.slots[action].id})
    tool = decision.tool(action)
    if tool in ("initiate_refund", "approve_refund"):  # the amount on record, as the lookups show it
        return tool, json.dumps({"amount": amount_on_record(decision.ticket)})
    return tool, json.dumps(ARGUMENTS.get(tool, {}))


def test_a_day_played_through_tool_calls_is_the_day_the_core_plays():
    # The caller plays every role with the heuristic's choices, sent as tool calls: the same day.
    scenario = csr_marl.load_scenario("standard_day", overrides=SHORT)
    session = TextSession(scenario, seed=4)
    turn = session.reset()
    heuristic = HeuristicPolicy(scenario, session.center.streams["policy"])
    turns = 0
    while turn is not None:
        decision = session.decision
        names = [tool["function"]["name"] for tool in turn.tools]
        name, arguments = as_tool_call(decision, heuristic(decision))
        assert name in names and decision.agent == turn.agent
        result = session.step(name, arguments)
        assert result.error is None
        turn, turns = result.turn, turns + 1
    assert turns > 100
    assert session.result.flow == csr_marl.simulate(scenario, policy="heuristic", seed=4).flow


def test_the_caller_plays_only_its_roles_and_colleagues_run_the_rest():
    session = TextSession("standard_day", seed=1, roles=("resolver",), overrides=SHORT)
    turn = session.reset()
    seen = set()
    while turn is not None:
        seen.add(turn.role)
        decision = session.decision
        name, arguments = as_tool_call(decision, decision.legal[-1])
        turn = session.step(name, arguments).turn
    assert seen == {"resolver"}
    assert session.result.flow["resolved"] + session.result.flow["closed_unresolved"] > 20


@pytest.mark.parametrize(
    ("name", "arguments", "why"),
    [
        ("open_the_pod_bay_doors", "{}", "is not a tool you can use now; use one of: classify"),
        ("classify", "{category: billing}", "arguments are not valid JSON"),
        ("classify", "[1, 2]", "arguments must be a JSON object"),
        ("classify", {"category": "billing", "priority": "low"}, "missing argument(s) route"),
        ("classify", {"category": "billing", "priority": "low", "route": "resolver", "tone": "calm"},
         "unexpected argument(s) tone"),
        ("classify", {"category": "fashion", "priority": "low", "route": "resolver"}, 'category must be one of "billing"'),
        ("classify", {"category": 3, "priority": "low", "route": "resolver"}, "category must be a string"),
    ],
)
def test_a_bad_call_is_refused_with_one_line_and_the_decision_waits(name, arguments, why):
    session = TextSession("standard_day", seed=0, overrides=SHORT)
    turn = session.reset()
    assert turn.phase == "triage"
    before = session.decision
    result = session.step(name, arguments)
    assert why in result.error and "\n" not in result.error
    assert result.turn.text.startswith(f"Your last call was refused: {result.error}")
    assert session.decision is before  # asked again
    assert result.reward == pytest.approx(session.scenario.rewards.illegal_action, abs=1e-9)  # booked in 2**-32 units


def test_after_the_retries_the_decision_takes_its_fallback():
    session = TextSession("standard_day", seed=0, overrides=SHORT, max_retries=1)
    session.reset()
    decision = session.decision
    session.step("shrug")
    result = session.step("shrug")
    assert session.decision is not decision
    assert "the fallback was taken" in result.turn.text
    assert session.center.rewards.totals["illegal_action"] == pytest.approx(2 * -0.1)
    line = session.conversation[decision.ticket.id][-1]
    assert line.endswith("(fallback after refused calls)") and "routed to resolver" in line


def test_work_tools_check_their_arguments():
    session = TextSession("tasks/resolve", seed=2)
    turn = session.reset()
    while turn.phase != "work":
        decision = session.decision
        turn = session.step(*as_tool_call(decision, decision.legal[0])).turn
    decision = session.decision
    for name, arguments, why in (
        ("respond_user", {"message": "   "}, "message must not be empty"),
        ("initiate_refund", {"amount": -5}, "amount must be at least 0"),
        ("initiate_refund", {"amount": True}, "amount must be a finite number"),
        ("initiate_refund", '{"amount": NaN}', "amount must be a finite number"),
        ("check_payment", {"why": "curious"}, "unexpected argument(s) why; it takes no arguments"),
    ):
        with pytest.raises(ToolCallError, match=r".*" + why.replace("(", r"\(").replace(")", r"\)")):
            parse_call(decision, name, arguments)
    assert parse_call(decision, "initiate_refund", '{"amount": 12}').action == decision.tool_action("initiate_refund")


def test_tools_are_json_schemas_with_every_argument_required_but_a_refunds_order():
    session = TextSession("standard_day", seed=3, overrides=SHORT)
    turn = session.reset()
    phases = set()
    while turn is not None and len(phases) < 3:
        decision = session.decision
        phases.add(decision.phase)
        for tool in tool_specs(decision):
            json.dumps(tool)  # serialisable as it is
            parameters = tool["function"]["parameters"]
            assert parameters["type"] == "object" and parameters["additionalProperties"] is False
            optional = {"order_id"} if tool["function"]["name"] in ("initiate_refund", "approve_refund") else set()
            assert sorted(parameters["required"]) == sorted(set(parameters["properties"]) - optional)
        turn = session.step(*as_tool_call(decision, decision.legal[0])).turn
    assert phases == {Phase.TRIAGE, Phase.PICK, Phase.WORK}


def test_the_text_shows_what_staff_see_and_never_the_hidden_facts():
    session = TextSession("tasks/resolve", seed=5)
    turn = session.reset()
    checked = 0
    while turn is not None:
        decision = session.decision
        if decision.phase is Phase.WORK:
            ticket = decision.ticket
            assert ticket.subject in turn.text and ticket.body in turn.text
            for fact, value in ticket.facts.items():
                assert (f"{fact} = {value}" in turn.text) == (fact in ticket.revealed)
            checked += 1
        turn = session.step(*as_tool_call(decision, decision.legal[0])).turn
    assert checked > 5


def test_a_mixed_team_one_role_each_from_the_caller_a_built_in_policy_and_any_callable():
    answered = []

    def desk(decision):  # stands for a trained checkpoint or a person at the keyboard
        answered.append(decision.role)
        return decision.legal[0]

    session = TextSession("standard_day", seed=6, roles=("resolver",), colleagues={"triage": "random", "escalation": desk},
                          overrides=SHORT)
    turn = session.reset()
    while turn is not None:
        assert turn.role == "resolver"
        decision = session.decision
        turn = session.step(*as_tool_call(decision, decision.legal[-1])).turn
    assert answered and set(answered) == {"escalation"}
    accuracy = session.result.kpis["triage_accuracy"]
    assert accuracy < 0.5  # the random triage, not the heuristic (which is right every time)
    with pytest.raises(ValueError, match="played by the caller"):
        TextSession("standard_day", roles=("resolver",), colleagues={"resolver": "random"})
    with pytest.raises(ValueError, match="unknown role"):
        TextSession("standard_day", colleagues={"manager": "random"})
    with pytest.raises(ValueError, match="unknown policy"):
        TextSession("standard_day", roles=("resolver",), colleagues={"triage": "psychic"})


def test_step_rewards_add_up_to_the_team_return_with_refused_calls() -> None:
    """A refused call's penalty is paid once: in its own step, never again in the next one."""
    session = TextSession("tasks/resolve", seed=3, overrides={"horizon_minutes": 90})
    turn = session.reset()
    total, refusals = 0.0, 0
    while turn is not None:
        if refusals < 6 and turn.phase == "work":
            refused = session.step("no_such_tool", {})
            refusals += 1
            assert refused.error and refused.reward == pytest.approx(session.scenario.rewards.illegal_action)
            total += refused.reward
        first = turn.tools[0]["function"]
        if first["name"] == "pick_ticket":
            result = session.step("pick_ticket", {"ticket_id": first["parameters"]["properties"]["ticket_id"]["enum"][0]})
        else:
            result = session.step("respond_user", {"message": "Thank you for writing in; this is now sorted."})
        total += result.reward
        turn = result.turn
    assert refusals == 6
    assert total == pytest.approx(session.result.team_return, abs=1e-6)
