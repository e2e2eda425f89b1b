"""Scenario configuration: frozen pydantic models, YAML loading and dotted overrides."""

from .distributions import Deterministic, Distribution, Empirical, Exponential, Gamma, Lognormal
from .domain import CATEGORIES, PRIORITIES, ROLES, ROUTES, TIERS
from .loading import (
    ScenarioError,
    apply_overrides,
    load_scenario,
    load_ticket_bank,
    scenario_names,
    scenarios_dir,
)
from .scenario import Scenario, ScenarioWarning
from .tickets import TicketBank

__all__ = [
    "CATEGORIES",
    "PRIORITIES",
    "ROLES",
    "ROUTES",
    "TIERS",
    "Deterministic",
    "Distribution",
    "Empirical",
    "Exponential",
    "Gamma",
    "Lognormal",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "TicketBank",
    "apply_overrides",
    "load_scenario",
    "load_ticket_bank",
    "scenario_names",
    "scenarios_dir",
]
