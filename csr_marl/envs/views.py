"""A dict over the live agents whose values are computed when read."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any


class AgentView(dict):
    """PettingZoo's ``rewards`` / ``_cumulative_rewards`` / ``infos``, computed on read.

    Every agent's reward changes at every step (a team reward reaches everyone), but a step must cost
    the same with 4 agents or 200: so the values are not stored, they are read from the reward account
    (or built) when asked for. Keys are the live agents; ``del view[agent]`` (PettingZoo's dead step)
    works as for a dict. Copies -- ``dict(view)``, ``copy``, ``deepcopy``, pickling -- are plain dicts
    of the values at that moment. The view is read-only.
    """

    __slots__ = ("_value",)

    def __init__(self, agents: Iterable[str], value: Callable[[str], Any]) -> None:
        super().__init__(dict.fromkeys(agents))
        self._value = value

    def __getitem__(self, agent: str) -> Any:
        if agent not in self:  # dict's own __contains__
            raise KeyError(agent)
        return self._value(agent)

    def get(self, agent: str, default: Any = None) -> Any:
        return self._value(agent) if agent in self else default

    # Overriding __iter__ makes dict(view) and {**view} read values through __getitem__.
    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        value = self._value
        return [(agent, value(agent)) for agent in dict.keys(self)]

    def values(self) -> list[Any]:  # type: ignore[override]
        value = self._value
        return [value(agent) for agent in dict.keys(self)]

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(self.items())

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(self.copy(), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.items(),))

    def __eq__(self, other: object) -> bool:
        return self.copy() == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.copy())

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("this view of the environment's agents is read-only")

    __setitem__ = setdefault = update = pop = popitem = clear = _read_only  # type: ignore[assignment]
