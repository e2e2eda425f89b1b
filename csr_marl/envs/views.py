"""A dict over the live agents whose values are computed when read, and which wrappers may write."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

_MISSING = object()


class Clock(Protocol):
    """What moves an :class:`AgentView`'s values: ``version`` changes whenever the core moves."""

    version: int


class AgentView(dict):
    """PettingZoo's ``rewards`` / ``_cumulative_rewards`` / ``infos``, computed on read.

    Every agent's reward changes at every step (a team reward reaches everyone), but a step must cost
    the same with 4 agents or 200: so the values are not stored, they are read from the reward account
    (or built) when asked for. Keys are the live agents; ``del view[agent]`` (PettingZoo's dead step)
    works as for a dict. Copies -- ``dict(view)``, ``copy``, ``deepcopy``, pickling -- are plain dicts
    of the values at that moment.

    Wrappers may write, as into a plain dict (PettingZoo's ``TerminateIllegalWrapper``, SuperSuit's
    reward wrappers and ``AECEnv._accumulate_rewards`` do): a written value is what readers see until
    the environment moves on, which the ``clock`` tells (its ``version`` changes at every move of the
    core), so a step never has to visit the views. Writes never reach the core's books: the reward
    account, the KPIs and the team return are the simulation's own.
    """

    __slots__ = ("_value", "_written", "_clock", "_stamp")

    def __init__(self, agents: Iterable[str], value: Callable[[str], Any], clock: Clock) -> None:
        super().__init__(dict.fromkeys(agents))
        self._value = value
        self._clock = clock  # its ``version`` counts the environment's moves
        self._written: dict[str, Any] = {}
        self._stamp = -1  # the clock's version when the writes were made

    def __getitem__(self, agent: str) -> Any:
        if self._written:  # rare: a wrapper wrote, perhaps before the environment moved
            value = self._written_value(agent)
            if value is not _MISSING:
                return value
        if agent not in self:  # dict's own __contains__
            raise KeyError(agent)
        return self._value(agent)

    def _written_value(self, agent: str) -> Any:
        if self._stamp != self._clock.version:  # the environment moved: values are computed again
            self._written.clear()
            return _MISSING
        return self._written.get(agent, _MISSING)

    def get(self, agent: str, default: Any = None) -> Any:
        return self[agent] if agent in self else default

    def get_many(self, agents: Iterable[str], default: Any = None) -> list[Any]:
        """``[view.get(agent, default) for agent in agents]``, read in one pass (a wrapper's per-step
        reward vector over every possible agent)."""
        if self._written:
            return [self.get(agent, default) for agent in agents]
        value = self._value
        return [value(agent) if agent in self else default for agent in agents]

    def __setitem__(self, agent: str, value: Any) -> None:
        dict.__setitem__(self, agent, None)
        if self._stamp != self._clock.version:
            self._written.clear()
            self._stamp = self._clock.version
        self._written[agent] = value

    def __delitem__(self, agent: str) -> None:
        dict.__delitem__(self, agent)
        self._written.pop(agent, None)

    # Overriding __iter__ makes dict(view) and {**view} read values through __getitem__.
    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return [(agent, self[agent]) for agent in dict.keys(self)]

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[agent] for agent in dict.keys(self)]

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(self.items())

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for agent, value in dict(*args, **kwargs).items():
            self[agent] = value

    def setdefault(self, agent: str, default: Any = None) -> Any:  # type: ignore[override]
        if agent not in self:
            self[agent] = default
        return self[agent]

    def pop(self, agent: str, *default: Any) -> Any:  # type: ignore[override]
        if agent not in self:
            if default:
                return default[0]
            raise KeyError(agent)
        value = self[agent]
        del self[agent]
        return value

    def popitem(self) -> tuple[str, Any]:
        agent = next(reversed(dict.keys(self)))
        return agent, self.pop(agent)

    def clear(self) -> None:
        dict.clear(self)
        self._written.clear()

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
