"""Where and with what a study ran: versions, machine and a stable hash of its definition."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

_PACKAGES = ("csr-marl", "numpy", "simpy", "pydantic", "pyyaml", "matplotlib", "ray")


def versions() -> dict[str, str]:
    """Python and the installed versions of the packages a result depends on (absent ones left out)."""
    found = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def machine() -> dict[str, Any]:
    """The machine a benchmark or study ran on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python_implementation": sys.implementation.name,
    }


def now() -> str:
    """UTC time stamp, ISO 8601, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def stable_hash(payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``payload`` (sorted keys), as 16 hex digits."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (16 hex digits), so a study's identity follows content, not location."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
