"""Input validation shared by the analysis modules (private)."""

from __future__ import annotations

import math
import numbers

__all__ = ["check_servers", "check_positive", "check_nonneg", "check_probability"]


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
    return value


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
