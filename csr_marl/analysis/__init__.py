"""Queueing formulas and statistics the simulation is checked against.

Pure numpy + standard library: Erlang B/C/A, Cobham priority waits, square-root
staffing, Student-t / Wilson confidence intervals and KPI aggregation.
"""

from .erlang import (
    cobham_waits,
    erlang_b,
    erlang_c,
    erlang_c_asa,
    erlang_c_occupancy,
    erlang_c_service_level,
    halfin_whitt_p_wait,
    servers_for_service_level,
    square_root_staffing,
)
from .erlang_a import ErlangAResult, erlang_a, servers_for_erlang_a
from .stats import (
    mean_ci,
    normal_cdf,
    normal_quantile,
    proportion_ci,
    summarise,
    t_cdf,
    t_quantile,
)

__all__ = [
    "ErlangAResult",
    "cobham_waits",
    "erlang_a",
    "erlang_b",
    "erlang_c",
    "erlang_c_asa",
    "erlang_c_occupancy",
    "erlang_c_service_level",
    "halfin_whitt_p_wait",
    "mean_ci",
    "normal_cdf",
    "normal_quantile",
    "proportion_ci",
    "servers_for_erlang_a",
    "servers_for_service_level",
    "square_root_staffing",
    "summarise",
    "t_cdf",
    "t_quantile",
]
