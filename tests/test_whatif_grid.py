"""``--vary`` parsing and the sweep grid: ranges, lists, YAML values, and one-line errors."""

from __future__ import annotations

import pytest

import csr_marl
from csr_marl.whatif import StudyError, grid_points, parse_vary
from csr_marl.whatif.grid import point_scenarios


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("staffing.resolver=3..6", (3, 4, 5, 6)),
        ("staffing.resolver=2..10:4", (2, 6, 10)),
        ("arrivals.rate_per_hour=100,150", (100, 150)),
        ("handle_times.triage.mean_minutes=0.5..1.5:0.5", (0.5, 1.0, 1.5)),
        ("staffing.triage=2", (2,)),
        ("customers.patience=[{dist: exponential, mean_minutes: 2}, null]", ({"dist": "exponential", "mean_minutes": 2}, None)),
    ],
)
def test_vary_values(text: str, values: tuple) -> None:
    axis = parse_vary(text)
    assert axis.field == text.partition("=")[0]
    assert axis.values == values


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("staffing.resolver", "expected FIELD=VALUES"),
        ("=3..5", "expected FIELD=VALUES"),
        ("staffing.resolver=10..3", "the range is empty (10 > 3)"),
        ("staffing.resolver=1..5:0", "the step must be > 0"),
        ("x.y=0.5..2", "a decimal range needs a step"),
        ("staffing.resolver=3,,4", "empty value in the list"),
        ("staffing.resolver=3,3", "value 3 is given twice"),
        ("staffing resolver=3", "is not a dotted field path"),
        ("staffing.resolver=1..5000", "more than the 1000 allowed"),
    ],
)
def test_malformed_vary_is_one_line(text: str, message: str) -> None:
    with pytest.raises(StudyError) as info:
        parse_vary(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_grid_is_every_combination_first_axis_slowest() -> None:
    points = grid_points([parse_vary("a=1..2"), parse_vary("b=x,y,z")])
    assert points == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
        {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"},
    ]


def test_point_scenarios_apply_each_point() -> None:
    base = csr_marl.load_scenario("mmc")
    scenarios = point_scenarios(base, [parse_vary("staffing.resolver=4..5"), parse_vary("arrivals.rate_per_hour=60,90")])
    assert [(s.staffing.resolver, s.arrivals.rate_per_hour) for s in scenarios] == [(4, 60), (4, 90), (5, 60), (5, 90)]


@pytest.mark.parametrize(
    ("vary", "message"),
    [
        (["staffing.resolvr=3..5"], "--vary staffing.resolvr=3..5: scenario 'mmc': staffing.resolvr: unknown key"),
        (["staffing.resolver=-1..2"], "staffing.resolver: Input should be greater than or equal to 0 (got -1)"),
        (["staffing.resolver=2", "staffing.resolver=3"], "--vary staffing.resolver: given twice"),
        (["staffing=x", "staffing.resolver=3"], "one is inside the other"),
    ],
)
def test_unknown_or_invalid_field_names_the_vary(vary: list[str], message: str) -> None:
    base = csr_marl.load_scenario("mmc")
    with pytest.raises(StudyError) as info:
        point_scenarios(base, [parse_vary(v) for v in vary])
    assert message in str(info.value)


def test_combination_invalid_only_together_names_the_point() -> None:
    base = csr_marl.load_scenario("mmc", {"staffing.escalation": 1})  # no triage
    with pytest.raises(StudyError, match="grid point staffing.resolver=0, staffing.escalation=0: .*nobody is staffed"):
        point_scenarios(base, [parse_vary("staffing.resolver=0,1"), parse_vary("staffing.escalation=0,1")])


@pytest.mark.parametrize("spec", ["[" * 100 + "]" * 100, "[" * 300 + "]" * 300, "[" * 300, "1," + "[" * 300 + "]" * 300])
def test_vary_lists_are_read_by_the_bounded_loader(spec: str) -> None:
    with pytest.raises(StudyError, match=r"^--vary 'staffing.resolver=.*(nested deeper|not valid YAML)"):
        parse_vary(f"staffing.resolver={spec}")


def test_sweep_refuses_a_deep_vary_in_one_line(tmp_path) -> None:
    from typer.testing import CliRunner

    from csr_marl.cli import app

    result = CliRunner().invoke(app, ["sweep", "validation/mmc", "--vary", "staffing.resolver=" + "[" * 300 + "]" * 300,
                                      "--out", str(tmp_path / "study")])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "--vary" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "study").exists()
