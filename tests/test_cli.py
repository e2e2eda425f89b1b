"""``csr-marl simulate`` and ``csr-marl scenarios``: readable output, JSON, one-line errors, exit code 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from csr_marl.cli import app

runner = CliRunner()


def test_simulate_prints_a_kpi_table() -> None:
    result = runner.invoke(app, ["simulate", "mmc", "--set", "horizon_minutes=120"])
    assert result.exit_code == 0, result.output
    assert "service_level" in result.output and "asa_minutes" in result.output
    assert "service_level: contacts answered from the resolver queue within 0.5 min" in result.output


def test_simulate_json_is_complete_and_deterministic() -> None:
    args = ["simulate", "standard_day", "--policy", "random", "--seed", "3", "--json", "--set", "horizon_minutes=60"]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    payload = json.loads(first.output)
    assert payload["kpis"]["offered"] > 0
    assert set(payload["breakdown"]) == {"priority", "tier", "category"}
    assert first.output == second.output


def test_scenarios_lists_descriptions() -> None:
    result = runner.invoke(app, ["scenarios"])
    assert result.exit_code == 0
    assert "standard_day" in result.output and "validation/mmc" in result.output


def test_bad_input_is_one_line_and_exit_2() -> None:
    cases = [
        (["simulate", "nope"], "unknown scenario 'nope'"),
        (["simulate", "mmc", "--set", "staffing.resolver=-1"], "staffing.resolver: Input should be greater than or equal to 0 (got -1)"),
        (["simulate", "mmc", "--set", "staffing"], "expected KEY=VALUE"),
        (["simulate", "mmc", "--set", "colour=red"], "colour: unknown key"),
        (["simulate", "mmc", "--policy", "psychic"], "unknown policy 'psychic'"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)
