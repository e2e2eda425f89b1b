"""An adaptive adversary: a beam search for a reply that scores without reading the lookups.

The fixed suite (:mod:`.adversarial`) covers the shortcuts someone thought of. This search looks for
others. A *reply policy* is a sequence of sentence blocks (:data:`BLOCKS`); each block is written from
what a policy may know without reading what the lookups found:

* the ticket's visible text and the customer's declared category, name, ids and amounts (the regex
  blanks of :func:`~csr_marl.text.adversarial.universal_reply`);
* the steps it took (boilerplate's steps: the heuristic's lookups and work tools), stated as actions;
* the yardstick itself: boilerplate's macro (:func:`~csr_marl.sim.responses.macro_reply`, its merge
  fields filled, no finding), so the search also asks whether anything added to the macro beats it;
* the rubric's own vocabulary: every finding sentence of the playbook (a guess), every finding's name,
  denials of every finding, the category's findings as a list, the shipping actions, apologies and
  thanks, and guessed dates and record numbers.

It never touches ``ticket.revealed``, ``ticket.details`` or ``ticket.facts``: the blocks receive a
:class:`Visible` view built without them (the macro reads none of them).

**Search.** Beam search over block sequences: start from the empty reply; each round extends every
sequence of the beam by one block not yet in it, plays each extension on the *training* seeds (the
boilerplate agent's steps, then the reply), keeps the ``beam`` best by mean episode score (a tie goes to
the sequence first in name order), and stops
after ``rounds`` rounds or when no extension beats the best so far. :func:`search` returns the best
sequence and its training mean; :func:`play_reply` scores it on held-out seeds beside the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..sim.decisions import Decision
from ..sim.reply_wording import ACTIONS, FINDINGS, SHIPPING_ACTIONS
from ..sim.responses import macro_reply
from ..sim.tickets import amount_on_record
from .adversarial import FACT_OF_CATEGORY, _blanks, suite_session
from .scripted import heuristic_chooser
from .session import TextSession


@dataclass(frozen=True)
class Visible:
    """What a reply block may read: nothing a lookup found."""

    name: str
    order: str | None
    money: str | None
    category: str
    subject: str
    done: tuple[str, ...]
    amount_on_record: str
    fact_values: dict[str, tuple[str, ...]]
    macro: str


def visible(decision: Decision, fact_values: dict[str, tuple[str, ...]]) -> Visible:
    """The view of ``decision``'s ticket a reply block gets (no revealed values, details or facts)."""
    ticket = decision.ticket
    assert ticket is not None
    name, order, money = _blanks(decision)
    return Visible(name, order, money, ticket.declared_category, ticket.subject, tuple(ticket.done),
                   f"${amount_on_record(ticket):.2f}", fact_values, macro_reply(ticket))


def _reference(v: Visible) -> str:
    about = " and ".join(x for x in (v.order, f"the payment of {v.money}" if v.money else None) if x)
    return f"I have looked into {about or 'your request'}."


def _category_values(v: Visible) -> tuple[str, ...]:
    return v.fact_values.get(FACT_OF_CATEGORY[v.category], ())


Block = Callable[[Visible], str]
BLOCKS: dict[str, Block] = {
    "macro": lambda v: v.macro,
    "greeting": lambda v: f"Hi {v.name},",
    "reference": _reference,
    "actions": lambda v: " ".join(ACTIONS[t].format(money=v.amount_on_record) for t in v.done if t in ACTIONS),
    "sorry": lambda v: "I am sorry for the trouble this has caused you.",
    "thanks": lambda v: "Thank you for your patience, and please reply if there is anything else I can do.",
    "handled": lambda v: "We have handled your request and checked everything on our side.",
    "subject": lambda v: f"You wrote to us about: {v.subject}.",
    "category_list": lambda v: " ".join(FINDINGS.get(x, "") for x in _category_values(v)),
    "category_names": lambda v: "Our lookup covered " + ", ".join(x.replace("_", " ") for x in _category_values(v)) + ".",
    "deny_all": lambda v: "There was no sign of " + " or ".join(
        x.replace("_", " ") for values in v.fact_values.values() for x in values) + ".",
    "deny_category": lambda v: "There was no sign of " + " or ".join(x.replace("_", " ") for x in _category_values(v)) + ".",
    "guessed_date": lambda v: "Our records show an entry on March 14.",
    "guessed_record": lambda v: "The reference on our side is 482913.",
    "shipping_actions": lambda v: " ".join(SHIPPING_ACTIONS.values()) if "update_shipping" in v.done else "",
    **{f"finding:{value}": (lambda value: lambda v: FINDINGS[value])(value) for value in FINDINGS},
    **{f"named:{value}": (lambda value: lambda v: f"Our lookup shows {value.replace('_', ' ')}.")(value)
       for value in FINDINGS},
}
#: A small block set for a fast check (continuous integration).
FAST_BLOCKS: tuple[str, ...] = (
    "macro", "greeting", "reference", "actions", "sorry", "thanks", "category_list", "deny_all", "guessed_date",
    "finding:duplicate_capture", "finding:delayed", "named:authorization_hold",
)


def reply_of(blocks: Sequence[str], v: Visible) -> str:
    """The reply a block sequence writes for ``v``."""
    return " ".join(text for text in (BLOCKS[b](v) for b in blocks) if text)


def play_reply(session: TextSession, blocks: Sequence[str], seed: int, max_calls: int = 400) -> float:
    """One episode: the boilerplate agent's steps, then the reply ``blocks`` write; its score."""
    turn: object = session.reset(seed=seed)
    fact_values = {fact: tuple(values) for fact, values in session.center.bank.fact_values.items()}

    def reply(decision: Decision) -> str:
        return reply_of(blocks, visible(decision, fact_values)) or "Thank you."

    choose = heuristic_chooser(session, seed, reply, copy_labels=True)
    calls = 0
    while turn is not None and session.decision is not None and calls < max_calls:
        turn = session.step(*choose(session.decision, calls)).turn
        calls += 1
    if turn is not None:
        session.stop()
    return session.score


@dataclass
class SearchResult:
    """The best block sequence found, its training mean, and each round's best mean."""

    blocks: tuple[str, ...]
    train_mean: float
    rounds: list[float]
    evaluated: int


def search(
    task: str, train_seeds: Iterable[int], blocks: Sequence[str] | None = None, beam: int = 2, rounds: int = 6,
) -> SearchResult:
    """Beam search (module docstring) for ``task``'s best non-reading reply on ``train_seeds``."""
    session = suite_session(task)
    seeds = tuple(train_seeds)
    pool = tuple(blocks if blocks is not None else BLOCKS)
    cache: dict[tuple[str, ...], float] = {}

    def mean(sequence: tuple[str, ...]) -> float:
        if sequence not in cache:
            cache[sequence] = sum(play_reply(session, sequence, seed) for seed in seeds) / len(seeds)
        return cache[sequence]

    frontier: list[tuple[str, ...]] = [()]
    best: tuple[str, ...] = ()
    best_mean = mean(best)
    history = [best_mean]
    for _ in range(rounds):
        children = {(*parent, block) for parent in frontier for block in pool if block not in parent}
        scored = sorted(children, key=lambda seq: (-mean(seq), seq))[:beam]
        if not scored or mean(scored[0]) <= best_mean + 1e-12:
            break
        frontier = scored
        best, best_mean = scored[0], mean(scored[0])
        history.append(best_mean)
    return SearchResult(best, best_mean, history, len(cache))


__all__ = ["BLOCKS", "FAST_BLOCKS", "SearchResult", "Visible", "play_reply", "reply_of", "search", "visible"]
