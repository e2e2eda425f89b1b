"""The training extra: torch and Tianshou are optional, imported only when training or loading a checkpoint."""

from __future__ import annotations

from ..config.extras import require_modules

INSTALL_HINT = (
    "pip install 'csr-marl[train]' (for the CPU-only torch build, install torch first from "
    "https://download.pytorch.org/whl/cpu)"
)


class TrainingUnavailable(ImportError):
    """torch or Tianshou is not installed."""


def require_training_extra() -> None:
    """Import torch and Tianshou, or fail with a message naming the extra to install."""
    require_modules(("tianshou", "torch"), "training", INSTALL_HINT, TrainingUnavailable)
