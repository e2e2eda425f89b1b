"""Input validation shared by the analysis modules (private)."""

from __future__ import annotations

import math
import numbers

__all__ = ["MAX_SERVERS", "check_servers", "check_load", "check_positive", "check_nonneg", "check_probability"]

#: The formulas here cost O(servers) (Erlang B's recursion, staffing searches): past this many agents
#: (or Erlangs of offered load) a question is refused instead of running for minutes. A million agents
#: in one queue is far beyond any contact center.
MAX_SERVERS = 1_000_000


def check_servers(servers: object, *, minimum: int = 0) -> int:
    """Return ``servers`` as an ``int`` or raise ``ValueError``.

    Accepts Python/numpy integers and integral floats (``13.0``); rejects booleans,
    fractional values and anything below ``minimum``.
    """
    if isinstance(servers, bool):
        raise ValueError(f"servers must be an integer, got {servers!r}")
    if isinstance(servers, numbers.Integral):
        value = int(servers)
    elif isinstance(servers, numbers.Real) and math.isfinite(float(servers)) and float(servers).is_integer():
        value = int(servers)
    else:
        raise ValueError(f"servers must be an integer, got {servers!r}")
    if value < minimum:
        raise ValueError(f"servers must be >= {minimum}, got {value}")
    if value > MAX_SERVERS:
        raise ValueError(f"servers must be <= {MAX_SERVERS:,}, got {value:,}")
    return value


def check_load(offered_load: float) -> float:
    """``offered_load`` (Erlangs) if the staffing it needs stays within :data:`MAX_SERVERS`."""
    if offered_load > MAX_SERVERS / 2:
        raise ValueError(
            f"offered load {offered_load:.4g} Erlangs is too large: staffing it needs more than "
            f"{MAX_SERVERS // 2:,} agents, beyond what these formulas handle (split the interval or the volume)"
        )
    return offered_load


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is > 0 (and finite unless ``allow_inf``)."""
    out = _real(name, value)
    if out <= 0.0:
        raise ValueError(f"{name} must be > 0, got {out!r}")
    if math.isinf(out) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {out!r}")
    return out


def check_nonneg(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is >= 0 (and finite unless ``allow_inf``)."""
    out = _real(name, value)
    if out < 0.0:
        raise ValueError(f"{name} must be >= 0, got {out!r}")
    if math.isinf(out) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {out!r}")
    return out


def check_probability(name: str, value: object) -> float:
    """Return ``value`` as a float if it lies strictly between 0 and 1."""
    out = _real(name, value)
    if not 0.0 < out < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {out!r}")
    return out
