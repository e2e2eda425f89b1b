"""A typed client for ``csr-marl serve``: the framework's ``EnvClient`` over one WebSocket session.

    from csr_marl.serve.client import ContactCenterClient, ToolCallAction

    with ContactCenterClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0, scenario="tasks/resolve", roles=["resolver"])
        while not result.done:
            turn = result.observation              # ContactCenterObservation: text, tools, agent, error
            name, arguments = my_model(turn.text, turn.tools)
            result = env.step(ToolCallAction(tool=name, arguments=arguments))
        print(result.observation.metadata["kpis"]["resolved"], result.reward)

It is async by default (``async with ContactCenterClient(...) as env: await env.reset()``), as every
OpenEnv client is. The framework's untyped ``openenv.GenericEnvClient`` works as well, with plain
dicts: ``env.step({"tool": "check_payment", "arguments": {}})``.
"""

from __future__ import annotations

from typing import Any

from .deps import require_serve_extra

require_serve_extra()  # one line naming the extra, not a bare ModuleNotFoundError

from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402

from .models import ContactCenterObservation, ContactCenterState, ToolCallAction  # noqa: E402

__all__ = ["ContactCenterClient", "ContactCenterObservation", "ContactCenterState", "ToolCallAction"]


class ContactCenterClient(EnvClient[ToolCallAction, ContactCenterObservation, ContactCenterState]):
    """One session on a csr_marl server; ``reset`` takes ``seed``, ``scenario``, ``roles``, ``colleagues``, ``overrides``."""

    def _step_payload(self, action: ToolCallAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ContactCenterObservation]:
        observation = ContactCenterObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> ContactCenterState:
        return ContactCenterState.model_validate(payload)
