"""The SimPy core of the contact center (no RL imports here: imports point one way, see docs/contributing.md)."""

from . import center as _center
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

#: Whether the core runs compiled (built with ``CSR_MARL_USE_MYPYC=1``: mypyc) or as pure Python.
COMPILED = not _center.__file__.endswith(".py")
if COMPILED:
    from ._build import warn_if_stale

    warn_if_stale()

__all__ = [
    "COMPILED",
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
