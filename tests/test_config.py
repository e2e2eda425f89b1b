"""Scenario loading, overrides, and one clear message per malformed input."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import yaml

import csr_marl
from csr_marl.config import Scenario, ScenarioError, load_scenario, scenario_names


def write(tmp_path: Path, data: dict, name: str = "scn.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def base(**extra) -> dict:
    data = {"name": "t", "arrivals": {"rate_per_hour": 60}, "tickets": {"bank": "tickets/validation.yaml"}}
    data.update(extra)
    return data


def test_shipped_scenarios_load_and_are_frozen() -> None:
    names = scenario_names()
    for required in ("standard_day", "surge", "night_shift", "validation/mmc", "validation/mmc_priority", "validation/two_tier"):
        assert required in names
    for name in names:
        scn = load_scenario(name)
        assert scn.description, f"{name} needs a one-line description"
        assert Path(scn.tickets.bank).is_file()
    scn = load_scenario("mmc")
    with pytest.raises(Exception):
        scn.horizon_minutes = 10  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(scn)) == scn


def test_dotted_overrides_apply() -> None:
    scn = load_scenario(
        "mmc",
        overrides={
            "staffing.resolver": 3,
            "arrivals.rate_per_hour": 150,
            "handle_times.tools.respond_user.mean_minutes": 1.0,
            "customers.patience": {"dist": "exponential", "mean_minutes": 2.0},
        },
    )
    assert scn.staffing.resolver == 3
    assert scn.arrivals.rate_per_hour == 150
    assert scn.handle_times.tools["respond_user"].mean == 1.0
    assert scn.customers.patience is not None and scn.customers.patience.mean == 2.0
    # A loaded scenario can be overridden again.
    again = load_scenario(scn, overrides={"staffing.resolver": 5})
    assert again.staffing.resolver == 5 and again.arrivals.rate_per_hour == 150


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"staffing.resolvers": 3}, "staffing.resolvers: unknown key"),
        ({"arrivals.rate_per_hour": -5}, "arrivals.rate_per_hour: Input should be greater than 0 (got -5)"),
        ({"arrivals.rate_per_hour": 0}, "arrivals.rate_per_hour: Input should be greater than 0 (got 0)"),
        ({"handle_times.tools.respond_user.mean_minutes": 0}, "handle_times.tools.respond_user.mean_minutes: Input should be greater than 0"),
        ({"customers.patience": {"dist": "lognormal", "mean_minutes": 3, "cv": -1}}, "customers.patience.cv: Input should be greater than 0 (got -1)"),
        ({"customers.tier_mix": {"basic": 0.5, "premium": 0.2}}, "customers: tier_mix: shares must sum to 1, got 0.7"),
        ({"customers.tier_mix": {"gold": 1.0}}, "unknown tier 'gold'"),
        ({"warmup_minutes": 700}, "warmup_minutes (700) must be shorter than horizon_minutes (600)"),
        ({"tickets.bank": "tickets/missing.yaml"}, "tickets.bank: file not found: 'tickets/missing.yaml'"),
        ({"staffing.shifts": [{"at_minute": 240, "resolver": 2}, {"at_minute": 120, "resolver": 5}]}, "shifts out of order: shifts[1].at_minute=120.0 is not after shifts[0].at_minute=240.0"),
        ({"handle_times.tools.teleport": {"dist": "exponential", "mean_minutes": 1}}, "unknown tool 'teleport'"),
        ({"handle_times.tools.respond_user": {"dist": "weibull", "mean_minutes": 1}}, "handle_times.tools.respond_user"),
        ({"staffing.resolver": 0}, "staffing: nobody is staffed in any role"),
        ({"arrivals.profile": [[0, 10]]}, "arrivals: give exactly one of rate_per_hour, profile or trace (got rate_per_hour, profile)"),
        ({"staffing.resolver.count": 3}, "staffing.resolver is a value, not a section"),
    ],
)
def test_bad_input_names_the_field_and_value(overrides: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("mmc", overrides=overrides)
    text = str(info.value)
    assert message in text, text
    assert "\n" not in text  # one line


def test_profile_must_be_in_order(tmp_path: Path) -> None:
    path = write(tmp_path, base(arrivals={"profile": [[0, 10], [60, 20], [30, 5]]}))
    with pytest.raises(ScenarioError, match=r"profile\[2\]: start_minute 30.0 is not after 60.0"):
        load_scenario(path)


def test_unknown_scenario_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'; known: .*standard_day"):
        load_scenario("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="bad.yaml: not valid YAML"):
        load_scenario(bad)
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ScenarioError, match="expected a mapping"):
        load_scenario(tmp_path / "list.yaml")


def test_relative_bank_and_trace_resolve_beside_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "trace.csv").write_text("arrival_minute\n0\n1.5\n1.5\n7\n")
    path = write(tmp_path, base(arrivals={"trace": "trace.csv"}, staffing={"triage": 0, "resolver": 1, "escalation": 0}))
    scn = load_scenario(path)
    assert Path(scn.arrivals.trace).is_absolute()
    result = csr_marl.simulate(scn, seed=0)
    assert result.flow["arrived"] == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [("arrival_minute\n0\n5\n2\n", "line 4: 2.0 is negative or out of order"),
     ("arrival_minute\n0\nsoon\n", "line 3: not a number: 'soon'"),
     ("arrival_minute\n", "no arrival times")],
)
def test_bad_trace(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "trace.csv").write_text(content)
    path = write(tmp_path, base(arrivals={"trace": "trace.csv"}))
    with pytest.raises(ScenarioError, match=message):
        load_scenario(path)


def test_bad_ticket_bank_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "bank.yaml").write_text(yaml.safe_dump({"fact_values": {}, "templates": [{"id": "x", "category": "sales", "priority": {"base": "low"}, "variants": [{"subject": "s", "body": "b"}]}]}))
    path = write(tmp_path, base(tickets={"bank": "bank.yaml"}))
    with pytest.raises(ScenarioError, match=r"ticket bank bank.yaml: templates\[0\].category: Input should be"):
        load_scenario(path)


def test_scenario_model_is_strict() -> None:
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        Scenario.model_validate({"name": "x", "arrivals": {"rate_per_hour": 1}, "color": "red"})
