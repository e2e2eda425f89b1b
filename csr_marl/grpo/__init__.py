"""Training language models on the contact center with TRL's GRPO (the ``grpo`` extra for training).

    from csr_marl.grpo import environment_factory, task_dataset
    trainer = GRPOTrainer(model=..., processing_class=..., args=GRPOConfig(...),
                          train_dataset=task_dataset("tasks/one_ticket", seeds=range(64)),
                          environment_factory=environment_factory("tasks/one_ticket"))

:mod:`.environment` is the ``environment_factory`` environment (the tools as methods, the episode
score as ``get_reward``), in process or against ``csr-marl serve``; :mod:`.rollout` is the
``rollout_func`` path over the OpenEnv client; :mod:`.tiny` builds a tiny model and tokenizer locally
(no downloads) for tests and CPU runs. The environment itself needs no TRL; the dataset, rollout and
tiny-model helpers import ``datasets`` / ``transformers`` on first use and fail with one line naming
the extra.
"""

from __future__ import annotations

from typing import Any

from ..config.extras import require_modules
from .backends import split_overrides
from .environment import ContactCenterToolEnv, environment_class, environment_factory

INSTALL_HINT = "pip install -e \".[grpo]\" (or pip install 'csr-marl[grpo]')"
SYSTEM_PROMPT = (
    "You work at a customer-support contact center. Each message shows one decision: the ticket as "
    "the customer wrote it and what your tools found. Answer with exactly one tool call at a time; "
    "look things up before you act, and close each ticket with a reply that names the customer, the "
    "order or amount, and what you found and did."
)


class GrpoUnavailable(ImportError):
    """A package of the ``grpo`` extra (TRL, transformers, datasets, tokenizers) is not installed."""


def require_grpo_extra() -> None:
    """Import the training stack, or fail with one line naming the extra."""
    require_modules(("datasets", "tokenizers", "transformers", "trl"), "GRPO training", INSTALL_HINT, GrpoUnavailable)


def task_dataset(tasks: str | list[str], seeds: Any, system_prompt: str = SYSTEM_PROMPT,
                 split: str | None = None) -> Any:
    """A ``datasets.Dataset`` of rows ``{prompt, task, seed}``, one per task and seed: TRL repeats each
    row ``num_generations`` times, so a GRPO group plays one customer. ``split`` (``all``, ``train``
    or ``test``) adds it to every row: the customers come from that side of the ticket bank's
    held-out split (without it, the environment's own ``split``)."""
    if split is not None:
        split_overrides(split)  # an unknown split fails here, before the training stack loads
    require_grpo_extra()
    from datasets import Dataset

    names = [tasks] if isinstance(tasks, str) else list(tasks)
    rows = [(task, int(seed)) for seed in seeds for task in names]
    prompt = [{"role": "system", "content": system_prompt}, {"role": "user", "content": ""}]
    columns = {"prompt": [prompt] * len(rows), "task": [t for t, _ in rows], "seed": [s for _, s in rows]}
    if split is not None:
        columns["split"] = [split] * len(rows)
    return Dataset.from_dict(columns)


__all__ = [
    "INSTALL_HINT", "SYSTEM_PROMPT", "ContactCenterToolEnv", "GrpoUnavailable", "environment_class",
    "environment_factory", "require_grpo_extra", "task_dataset",
]
