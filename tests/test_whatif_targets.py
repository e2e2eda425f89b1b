"""``--target`` parsing and how a confidence interval settles a target."""

from __future__ import annotations

import math

import pytest

from csr_marl.whatif import Estimate, StudyError, Target, parse_target, parse_targets


def test_parse_target() -> None:
    assert parse_target("service_level>=0.8") == Target("service_level", ">=", 0.8)
    assert parse_target(" abandonment_rate <= 0.05 ") == Target("abandonment_rate", "<=", 0.05)
    assert str(parse_target("asa_minutes<1")) == "asa_minutes<1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("service_level=0.8", "expected KPI>=VALUE or KPI<=VALUE"),
        ("service_level>=", "expected KPI>=VALUE or KPI<=VALUE"),
        ("service_levl>=0.8", "unknown KPI 'service_levl' (did you mean service_level?)"),
        ("service_level>=high", "'high' is not a number"),
        ("service_level>=1.5", "impossible, service_level is a share between 0 and 1"),
        ("abandonment_rate<0", "impossible, abandonment_rate is a share between 0 and 1"),
        ("asa_minutes<=nan", "the bound must be a finite number"),
    ],
)
def test_malformed_target_is_one_line(text: str, message: str) -> None:
    with pytest.raises(StudyError) as info:
        parse_target(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_kpi_bounded_twice_the_same_way_is_refused() -> None:
    with pytest.raises(StudyError, match="already bounded"):
        parse_targets(["service_level>=0.8", "service_level>=0.9"])
    assert len(parse_targets(["occupancy_resolver>=0.6", "occupancy_resolver<=0.9"])) == 2


def test_verdict_needs_the_whole_interval() -> None:
    target = Target("service_level", ">=", 0.8)
    assert target.verdict(Estimate(0.85, 0.81, 0.89, 10)) == "met"
    assert target.verdict(Estimate(0.80, 0.75, 0.85, 10)) == "undecided"
    assert target.verdict(Estimate(0.70, 0.65, 0.75, 10)) == "missed"
    assert target.verdict(Estimate(0.9, math.nan, math.nan, 1)) == "undecided"
    assert target.verdict(Estimate(math.nan, math.nan, math.nan, 0)) == "missed"
    lower = Target("abandonment_rate", "<=", 0.05)
    assert lower.verdict(Estimate(0.02, 0.01, 0.03, 10)) == "met"
    assert lower.verdict(Estimate(0.07, 0.06, 0.08, 10)) == "missed"
