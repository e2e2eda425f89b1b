"""Skips for tests of the optional extras: the reason names the extra to install."""

from __future__ import annotations

from types import ModuleType

import pytest

# The first dotted part of a module the tests import -> the extra of pyproject.toml that installs it.
EXTRA_OF = {
    "ciw": "dev",
    "setuptools": "dev",  # ciw requires it (and building a wheel without isolation uses it)
    "supersuit": "consumers",
    "stable_baselines3": "consumers",
    "sb3_contrib": "consumers",
    "torchrl": "consumers",
    "torch": "train",
    "tianshou": "train",
    "ray": "ray",
    "openenv": "serve",
    "openai": "llm",
    "ortools": "analyst",
    "scipy": "analyst",
    "sklearn": "baselines",
    "trl": "grpo",
    "transformers": "grpo",
    "jinja2": "grpo",
    "gguf": "local",
    "mkdocs": "docs",
    "material": "docs",
    "mkdocstrings": "docs",
}


def skip_reason(module: str, extra: str | None = None) -> str:
    """The skip reason for a missing ``module``: which extra installs it, and the command."""
    extra = extra or EXTRA_OF.get(module.split(".")[0])
    if extra is None:
        return f"{module} is not installed, and no extra ships it: pip install {module.split('.')[0]}"
    return f"{module} is not installed: it comes with the {extra} extra (pip install -e '.[{extra}]')"


def need(module: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` or skip the test, naming the extra that installs it (``extra`` overrides the
    table, for a module two extras share)."""
    return pytest.importorskip(module, reason=skip_reason(module, extra))
