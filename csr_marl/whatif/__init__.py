"""Staffing what-if studies and baselines on top of the simulation core.

    from csr_marl.whatif import sweep_study, run_sweep, search_staffing, parse_targets, erlang_table

* :func:`sweep_study` / :func:`run_sweep`: a grid of scenario variants x replications, common random
  numbers across the grid, 95% CIs, resumable output folder, plot.
* :func:`search_staffing`: least headcount per role meeting every target, from an Erlang estimate,
  confirmed by simulation until the CIs settle.
* :func:`plan_intervals`: a headcount per role per interval in seconds, an analytic plan corrected by
  simulation rounds and confirmed on fresh days, textbook SIPP beside it, both checked with interval
  service levels and CIs (``precise=True``: the same rounds on four times the replications).
* :func:`solve_schedule`: shifts covering a per-interval requirement (OR-Tools CP-SAT, extra ``analyst``).
* :func:`calibrate`: a scenario's arrivals, handle times, patience and mixes from a contact log.
* :func:`erlang_table`: the analytic Erlang C / Erlang A staffing table.
* :func:`run_baselines`: team return and KPIs of a built-in policy, per scenario.
* Executors: any ``concurrent.futures.Executor``; :func:`make_executor` builds a process pool, Ray or
  inline one.
"""

from .baselines import BaselineRow, baseline_markdown, run_baselines, write_baseline_report
from .calibrate import Calibration, calibrate, read_contact_log
from .definition import SweepDefinition, load_sweep_definition
from .erlang_table import ErlangRow, ErlangTable, erlang_table
from .errors import StudyError
from .executors import InlineExecutor, RayExecutor, executor_scope, make_executor
from .grid import Axis, grid_points, parse_vary
from .interval_planner import plan_intervals
from .interval_staffing import IntervalPlan
from .records import metric_names
from .replications import Replication, replication_seed, run_replication, run_replications
from .schedule import Schedule, shift_templates, solve_schedule
from .staffing import Evaluation, RoleAnswer, StaffingAnswer, least_feasible, search_staffing
from .staffing_estimate import ErlangEstimate
from .summary import Estimate
from .sweep import PointSummary, SweepOutcome, SweepStudy, run_sweep, sweep_study
from .targets import Target, parse_target, parse_targets

__all__ = [
    "Axis",
    "BaselineRow",
    "Calibration",
    "ErlangEstimate",
    "ErlangRow",
    "ErlangTable",
    "Estimate",
    "Evaluation",
    "IntervalPlan",
    "InlineExecutor",
    "PointSummary",
    "RayExecutor",
    "Replication",
    "RoleAnswer",
    "Schedule",
    "StaffingAnswer",
    "StudyError",
    "SweepDefinition",
    "SweepOutcome",
    "SweepStudy",
    "Target",
    "baseline_markdown",
    "calibrate",
    "erlang_table",
    "executor_scope",
    "grid_points",
    "least_feasible",
    "load_sweep_definition",
    "make_executor",
    "metric_names",
    "parse_target",
    "parse_targets",
    "parse_vary",
    "plan_intervals",
    "read_contact_log",
    "replication_seed",
    "run_baselines",
    "run_replication",
    "run_replications",
    "run_sweep",
    "search_staffing",
    "shift_templates",
    "solve_schedule",
    "sweep_study",
    "write_baseline_report",
]
