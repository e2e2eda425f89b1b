"""Scripted episodes sent to a running ``csr-marl serve``, call for call: the server's scores for the
calls a policy made in process (:func:`csr_marl.text.adversarial.run_suite` keeps them)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .client import ContactCenterClient, ToolCallAction

Episode = tuple[str, str, int]  # (task, policy, seed)
Calls = Sequence[tuple[str, dict[str, Any]]]


def replay_episodes(
    base_url: str, episodes: Mapping[Episode, Calls], reset_options: Callable[[str], dict[str, Any]]
) -> dict[Episode, float]:
    """Each episode's calls over one WebSocket session; its episode score as the server reports it.
    ``reset_options(task)`` gives the reset's scenario, roles and overrides for a task."""

    async def replay() -> dict[Episode, float]:
        scores = {}
        async with ContactCenterClient(base_url=base_url) as env:
            for (task, policy, seed), calls in episodes.items():
                result = await env.reset(seed=seed, **reset_options(task))
                for name, arguments in calls:
                    if result.done:
                        break
                    result = await env.step(ToolCallAction(tool=name, arguments=arguments))
                scores[(task, policy, seed)] = result.observation.score
        return scores

    return asyncio.run(replay())
