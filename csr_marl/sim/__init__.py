"""The SimPy core of the contact center (no RL imports here: imports point one way, see docs/contributing.md)."""

from .center import ConservationError, ContactCenter
from .decisions import (
    ROLE_TOOLS,
    Decision,
    IllegalActionError,
    Phase,
    action_count,
    decode_triage,
    encode_triage,
)
from .kpis import KPI_DEFINITIONS, kpi_definitions
from .result import SimulationResult
from .staff import Staff
from .tickets import Ticket

__all__ = [
    "KPI_DEFINITIONS",
    "kpi_definitions",
    "ROLE_TOOLS",
    "ConservationError",
    "ContactCenter",
    "Decision",
    "IllegalActionError",
    "Phase",
    "SimulationResult",
    "Staff",
    "Ticket",
    "action_count",
    "decode_triage",
    "encode_triage",
]
