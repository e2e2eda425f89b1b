"""The contact center as a TRL ``environment_factory`` environment.

    from trl import GRPOConfig, GRPOTrainer
    from csr_marl.grpo import environment_factory, task_dataset

    trainer = GRPOTrainer(
        model=model, processing_class=tokenizer, args=GRPOConfig(num_generations=8, ...),
        train_dataset=task_dataset("tasks/one_ticket", seeds=range(64)),
        environment_factory=environment_factory("tasks/one_ticket"),   # or base_url="http://..."
    )

TRL builds one environment per generation and calls ``reset(**row)`` with the dataset row (its
``task`` and ``seed``: every generation of a prompt sees the same customer; a ``split`` too, where the
row carries one), appends the returned
text to the prompt, then lets the model call the environment's public methods as tools until it
stops calling, and finally scores the rollout with ``get_reward()``: the episode score in [-1, 1]
(:mod:`csr_marl.text.scoring`), which an idle, stalling or boilerplate rollout cannot game.

**Phase-dependent legality.** TRL wants one fixed set of tools per environment, while the tools legal
now depend on the decision (triage, pick, work; the tool cap). The answer: the environment offers
every tool its task's roles may ever use, with the schemas of :mod:`csr_marl.text.tools`; a call that
is not legal now is refused by the session's strict parser -- the tool's result says why and shows
the decision again with the tools legal now -- and it costs ``rewards.illegal_action`` in the step
rewards and lowers the episode score's efficiency. Nothing raises, so TRL never counts a failure.

Each rollout may make at most ``max_calls`` calls; the next one ends the episode (truncated).

**Held-out tickets.** ``split`` (``environment_factory(..., split=...)``, or a row's ``split``) draws
the customers from one side of the ticket bank's held-out split (the scenario key ``tickets.split``:
``all``, the default, ``train`` or ``test``): train on ``train`` and evaluate on ``test``, and the
model is judged on ticket templates and wordings it never saw.

**Follow-ups.** After a call the environment answers with the next decision. By default that is the
whole decision again (``follow_ups="full"``): the ticket, its body and all that was found, some
250 tokens on a resolver task. TRL counts tool results inside ``max_completion_length``, so with
a cap of 256 a resolver's rollout ends after its first lookup and never reaches the reply.
``follow_ups="brief"`` sends, while the same agent stays on the same ticket, only the lines that
changed (the clock, what the tools found, the steps done, the customer's answers) and the question;
a new ticket or a pick is shown whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..text.tasks import task_roles
from .backends import Backend, InProcess, Remote, Reply, split_overrides
from .tools import tool_mixins


class ContactCenterToolEnv:
    """One rollout's contact center. Subclasses (made by :func:`environment_class`) add the tools."""

    task = "tasks/one_ticket"
    max_calls = 12
    follow_ups = "full"
    split = "all"

    def __init__(self, backend: Backend | None = None) -> None:
        self._backend: Backend = backend if backend is not None else InProcess()
        self._seeds = np.random.default_rng()
        self._calls = 0
        self._over = True
        self._score = 0.0
        self._rewards: list[float] = []
        self._shown = ""

    def reset(self, **row: Any) -> str:
        """Start an episode of the row's ``task`` (the class's by default) with the row's ``seed``
        (drawn at random without one), its customer drawn from the row's ``split`` of the ticket bank
        (the class's by default: ``all``); the first decision, as text, to append to the prompt."""
        task = row.get("task") or self.task
        seed = row.get("seed")
        if seed is None:
            seed = int(self._seeds.integers(2**31 - 1))
        split = str(row.get("split") or self.split)
        split_overrides(split)  # an unknown split fails here, in one line
        reply = self._backend.start(str(task), int(seed), split)
        self._calls, self._over, self._score, self._rewards = 0, False, 0.0, []
        self._shown = reply.text
        return reply.text

    def get_reward(self) -> float:
        """The rollout's reward: the episode score in [-1, 1] (below 0: damage done; so far, if the model stopped early)."""
        if not self._over:
            self._score = self._backend.stop()
            self._over = True
        return self._score

    # --- read-only views (properties: TRL turns only methods into tools) ---------------------------
    @property
    def episode_over(self) -> bool:
        """The episode has ended (every ticket closed, cut off, or the call limit reached): calls are refused."""
        return self._over

    @property
    def score_breakdown(self) -> list[dict[str, Any]]:
        """What the episode's score is made of, per ticket (in process; empty over a server):
        :meth:`csr_marl.text.scoring.EpisodeScore.breakdown`."""
        return self._backend.breakdown()

    @property
    def step_rewards(self) -> list[float]:
        """The step rewards of this rollout's calls so far."""
        return list(self._rewards)

    @property
    def calls(self) -> int:
        """Calls made this episode."""
        return self._calls

    # --- the tools' common path -------------------------------------------------------------------
    def _call(self, name: str, **arguments: Any) -> str:
        if self._over:
            return "The episode is over: no more calls are taken."
        if self._calls >= self.max_calls:
            self._score = self._backend.stop()
            self._over = True
            return f"Call limit ({self.max_calls}) reached: the episode is over (truncated)."
        self._calls += 1
        reply = self._backend.call(name, arguments)
        self._rewards.append(reply.reward)
        self._score = reply.score
        return self._describe(reply)

    def _describe(self, reply: Reply) -> str:
        if reply.done:
            self._over = True
            how = "every ticket is closed" if reply.terminated else "it was cut off (truncated)"
            return f"Reward {reply.reward:+.2f}. The episode is over: {how}. Episode score {reply.score:.2f}."
        head = f"Refused: {reply.error}" if reply.error else f"Done. Reward {reply.reward:+.2f}."
        text = follow_up(self._shown, reply.text) if self.follow_ups == "brief" else reply.text
        self._shown = reply.text
        return f"{head}\n\n{text}"


_AGENT = re.compile(r"^You are (\S+?)\.", re.MULTILINE)
_TICKET = re.compile(r"^Ticket #(\d+) from ", re.MULTILINE)
FOLLOW_UPS = ("full", "brief")


def _subject(text: str) -> tuple[str, str] | None:
    """Whose decision on which ticket ``text`` shows (None: no single ticket, e.g. a pick)."""
    agent, ticket = _AGENT.search(text), _TICKET.search(text)
    return (agent.group(1), ticket.group(1)) if agent and ticket else None


def follow_up(before: str, now: str) -> str:
    """``now``, the next decision, as a follow-up to ``before``: when both are the same agent's decision
    on the same ticket, only the lines of ``now`` not shown in ``before`` and its last line (the
    question); otherwise ``now`` whole."""
    subject = _subject(now)
    if subject is None or subject != _subject(before):
        return now
    seen = set(before.splitlines())
    lines = now.splitlines()
    changed = [line for line in lines[:-1] if line.strip() and line not in seen]
    return "\n".join([f"Ticket #{subject[1]}, as above; what changed:", *changed, "", lines[-1]])


def environment_class(task: str, max_calls: int = 12, follow_ups: str = "full", split: str = "all") -> type:
    """A :class:`ContactCenterToolEnv` subclass for ``task`` whose public methods are the tools the
    task's roles (:data:`csr_marl.text.tasks.TASK_ROLES`) may use; ``follow_ups``: what a tool's
    result shows of the next decision ("full", or "brief": see the module's docs); ``split``: the
    side of the ticket bank's held-out split its customers come from, unless a row names one."""
    if follow_ups not in FOLLOW_UPS:
        raise ValueError(f"follow_ups must be one of {', '.join(FOLLOW_UPS)}, got {follow_ups!r}")
    split_overrides(split)
    played = task_roles(task)
    name = "ContactCenter_" + "_".join(played)
    return type(name, (ContactCenterToolEnv, *tool_mixins(played)),
                {"task": task, "max_calls": max_calls, "follow_ups": follow_ups, "split": split})


def environment_factory(
    task: str = "tasks/one_ticket",
    *,
    base_url: str | None = None,
    colleagues: str = "heuristic",
    max_calls: int = 12,
    follow_ups: str = "full",
    split: str = "all",
) -> Callable[[], ContactCenterToolEnv]:
    """A zero-argument factory for TRL's ``environment_factory``: each call makes one environment of
    ``task``, in this process, or with ``base_url`` a session on a ``csr-marl serve`` server (run it
    with ``--max-sessions`` at least the number of generations per step). ``follow_ups="brief"``
    keeps tool results short (the module's docs: TRL counts them in ``max_completion_length``).
    ``split``: ``train`` or ``test`` draws the customers from that side of the ticket bank's held-out
    split (``all``, the default: the whole bank; a dataset row's ``split`` wins)."""
    cls = environment_class(task, max_calls, follow_ups, split)

    def make() -> ContactCenterToolEnv:
        backend: Backend = Remote(base_url, colleagues) if base_url else InProcess(colleagues)
        return cls(backend)

    return make
