"""Sweep definitions as YAML presets (``configs/sweeps/*.yaml``), so a study can be rerun by name.

    scenario: standard_day
    set: {customers.patience.mean_minutes: 30}
    vary: ["staffing.resolver=6..13"]          # or {staffing.resolver: 6..13} or {field: [v1, v2]}
    replications: 30
    policy: heuristic
    seed: 0
    kpi: sla_attainment
    targets: ["sla_attainment>=0.9", "abandonment_rate<=0.05"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config.loading import ScenarioError, format_validation_error, read_yaml_file
from .errors import StudyError
from .grid import Axis, parse_vary


class SweepDefinition(BaseModel):
    """What ``csr-marl sweep --config FILE`` reads; command-line options override each key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    vary: list[str] | dict[str, Any] = Field(default_factory=list)
    replications: int | None = Field(default=None, ge=1)
    policy: str | None = None
    seed: int | None = None
    kpi: str | None = None
    targets: list[str] = Field(default_factory=list)

    def axes(self) -> list[Axis]:
        """The ``vary`` entries as axes (a mapping value that is a list gives the values as they are)."""
        if isinstance(self.vary, list):
            return [parse_vary(item) for item in self.vary]
        axes = []
        for field, spec in self.vary.items():
            if isinstance(spec, list):
                axes.append(Axis(field, tuple(spec), f"{field}={spec}"))
            else:
                axes.append(parse_vary(f"{field}={spec}"))
        return axes


def load_sweep_definition(path: str | Path) -> SweepDefinition:
    """Read and validate a sweep definition; :class:`StudyError` names the bad key."""
    file = Path(path)
    if not file.is_file():
        raise StudyError(f"--config: file not found: {file}")
    try:
        raw = read_yaml_file(file, "--config") or {}
    except ScenarioError as exc:
        raise StudyError(str(exc)) from None
    try:
        return SweepDefinition.model_validate(raw)
    except ValidationError as exc:
        raise StudyError(format_validation_error(f"sweep definition {file.name}", exc)) from None
