"""Text noise: the ticket as the customer really types it (scenario key ``tickets.noise``).

The bank's templates are clean; real tickets carry typos, subjects that point the wrong way, a second
topic tacked on, and a web-form label that the customer also states in words. :class:`TextNoise`
rewrites a freshly written ticket's subject and body that way (the kinds and their rates are documented
on :class:`csr_marl.config.scenario.TextNoise`). The ticket's true priority is read before, from the
clean text.

Everything a ticket could borrow is worked out once per bank and split: the words of each text variant that
may take a typo, the subjects and issue descriptions of every other category (from the scenario's own split
only, so a train scenario never shows held-out text). Per ticket the work is a few buffered uniform
draws; typo positions come from geometric gaps between hit words, not one draw per word.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final, NamedTuple, TYPE_CHECKING

from ..config.domain import CATEGORIES
from ..config.scenario import TextNoise as NoiseConfig
from ..config.tickets import SLOT_PATTERN, TextVariant, TicketBank
from .random import UniformStream
from .slots import slot_value

if TYPE_CHECKING:
    from .tickets import Ticket

# A word that may take a typo: four or more letters, standing alone (not part of an id like 1Z4..., a
# contraction, or a {slot} name).
_WORD: Final = re.compile(r"(?<![A-Za-z0-9'{_])[A-Za-z]{4,}(?![A-Za-z0-9'}_])")
_GREETING: Final = re.compile(r"^(hi|hello|hey|dear)( there| team| support)?[,!.]?\s+", re.I)
_SIGN_OFF: Final = re.compile(
    r"\s*((many thanks|thanks|thank you|kind regards|best regards|regards|best|cheers)[,!.]?\s*)?"
    r"(- ?)?\{first_name\}(,\s*\{company\})?\s*$", re.I
)
# Who the customer is stays the same in a second issue; its ids, amounts and products are its own.
_SAME_CUSTOMER: Final[tuple[str, ...]] = ("first_name", "company")
_KEEPS_CAPITAL: Final = re.compile(r"^(\{|I\b|I'|[A-Z0-9]{2,}\b)")

# How a second topic is tacked on: (lead-in, whether the first letter of what follows drops to lower case).
MIXED_LEADS: Final[tuple[tuple[str, bool], ...]] = (
    ("Also, ", True), ("PS ", False), ("P.S. ", False), ("Oh and ", True),
    ("One more thing: ", False), ("While I have you: ", False),
)

# What a customer writes when they pick a label on the web form, by the label they picked.
STATED_CATEGORY: Final[dict[str, tuple[str, ...]]] = {
    "billing": (
        "This is a billing question.",
        "I think this is a billing issue, please pass it to payments.",
        "Filing this under billing / payments.",
        "Sending this to the billing team since it's about money.",
    ),
    "shipping": (
        "This is about a delivery.",
        "Putting this under shipping & delivery.",
        "It's a shipping problem, I think.",
        "Please forward to your shipping department.",
    ),
    "technical": (
        "This is a technical problem.",
        "Tech support please, I think it's a bug.",
        "Filing under technical issue / app problem.",
        "Probably one for your engineers.",
    ),
    "general": (
        "Just a general question.",
        "This is a general account question, nothing is broken.",
        "Filing under other / general enquiry.",
        "Not a complaint, just a question about my account.",
    ),
}
STATED_PRIORITY: Final[dict[str, tuple[str, ...]]] = {
    "urgent": (
        "URGENT - please answer today!",
        "This is an emergency, I need help right now.",
        "Marked urgent: my home is unprotected until this is fixed.",
        "PLEASE respond asap, this cannot wait.",
    ),
    "high": (
        "Please treat this as high priority.",
        "This is important, I need an answer soon.",
        "Would appreciate a quick reply on this one.",
    ),
    "medium": (
        "A reply in the next day or so would be great.",
        "Normal priority, but I'd like it sorted this week.",
        "Not an emergency, but please don't let it sit.",
    ),
    "low": (
        "No rush on this.",
        "Whenever you get a chance.",
        "Not urgent at all, just curious.",
        "Low priority, reply whenever.",
    ),
}


class TextNoise:
    """Rewrites new tickets' text for one scenario: its noise rates, its split of the bank."""

    def __init__(self, config: NoiseConfig, bank: TicketBank, split: str, u: UniformStream) -> None:
        """The templates and variants of ``bank`` that ``split`` draws, in the factory's order
        (``bank.templates_in(split)``); ``u``: the noise's own uniform stream."""
        self._u = u
        self._typo = config.typo_rate
        self._log_miss = math.log1p(-config.typo_rate) if 0 < config.typo_rate < 1 else 0.0
        self._misleading = config.misleading_subject
        self._mixed = config.mixed_topic
        self._stated = config.stated_labels
        prepared = _prepared(bank, split)
        self._listed, self._words, self._other_subjects, self._other_topics = prepared.material

    def rewrite(self, ticket: Ticket, template_index: int, variant_index: int, variant: TextVariant) -> None:
        """Replace ``ticket.subject``, ``body`` and ``text`` by a noisy version of the clean text.

        ``variant`` is the clean text the ticket was written from; ``ticket.slot_values`` its slot
        values; the true and declared labels are already set."""
        u = self._u
        values = ticket.slot_values
        subject, body = ticket.subject, ticket.body
        typos = self._typos(self._words[template_index][variant_index]) if self._typo > 0 else None
        if typos is not None:
            in_subject, in_body = typos
            if in_subject:
                subject = _render(_misspell(variant.subject, in_subject, u), values)
            if in_body:
                body = _render(_misspell(variant.body, in_body, u), values)
        category = ticket.true_category
        if self._misleading > 0 and u() < self._misleading:
            others = self._other_subjects[category]
            if others:
                text, slots = others[u.integer(len(others))]
                subject = self._fill(text, slots, values)
        if self._mixed > 0 and u() < self._mixed:
            others = self._other_topics[category]
            if others:
                topic, lowered, slots = others[u.integer(len(others))]
                lead, lower = MIXED_LEADS[u.integer(len(MIXED_LEADS))]
                own = {slot: values[slot] for slot in _SAME_CUSTOMER if slot in values}
                body = f"{body}\n\n{lead}{self._fill(lowered if lower else topic, slots, own)}"
        if self._stated > 0:
            stated = []
            if ticket.declared_category != category and u() < self._stated:
                phrases = STATED_CATEGORY[ticket.declared_category]
                stated.append(phrases[u.integer(len(phrases))])
            if ticket.declared_priority != ticket.true_priority and u() < self._stated:
                phrases = STATED_PRIORITY[ticket.declared_priority]
                stated.append(phrases[u.integer(len(phrases))])
            if stated:
                body = " ".join(stated) + "\n\n" + body
        ticket.subject, ticket.body = subject, body
        ticket.text = f"{subject}\n{body}"

    def _typos(self, words: tuple[list[tuple[int, int]], list[tuple[int, int]]]) -> tuple[list, list] | None:
        """Which of the variant's typo-able words get one: the gaps between hits are geometric."""
        subject_words, body_words = words
        n = len(subject_words) + len(body_words)
        hits: Sequence[int]
        if self._typo >= 1.0:
            hits = range(n)
        else:
            found: list[int] = []
            index, u = -1, self._u
            while True:
                index += 1 + int(math.log(1.0 - u()) / self._log_miss)
                if index >= n:
                    break
                found.append(index)
            if not found:
                return None
            hits = found
        cut = len(subject_words)
        return [subject_words[i] for i in hits if i < cut], [body_words[i - cut] for i in hits if i >= cut]

    def _fill(self, text: str, slots: tuple[str, ...], values: dict[str, str]) -> str:
        """``text`` with its slots filled: from ``values`` where they hold the slot, else new draws."""
        if not slots:
            return text
        filled = {s: values[s] if s in values else slot_value(s, self._u, self._listed) for s in slots}
        return text.format_map(filled)


class _Prepared(NamedTuple):
    bank: TicketBank
    material: tuple[dict[str, tuple[str, ...]], list, dict[str, list], dict[str, list]]


_PREPARED: Final[dict[tuple[int, str], _Prepared]] = {}


def _prepared(bank: TicketBank, split: str) -> _Prepared:
    """What tickets of ``split`` may borrow, worked out once per bank and split (banks are cached by
    path, so every episode of a scenario shares it): the slot values, the typo-able words of each
    variant, and per category the subjects and second issues of every other category."""
    entry = _PREPARED.get((id(bank), split))
    if entry is not None and entry.bank is bank:
        return entry
    drawn = bank.templates_in(split)
    words = [[_typo_spans(v) for v in variants] for _, variants in drawn]
    subjects: dict[str, list[tuple[str, tuple[str, ...]]]] = {c: [] for c in CATEGORIES}
    topics: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {c: [] for c in CATEGORIES}
    for template, variants in drawn:
        for variant in variants:
            subjects[template.category].append((variant.subject, _slots(variant.subject)))
            topic = second_topic(variant.body)
            if topic is not None:
                topics[template.category].append((topic, _lower_first(topic), _slots(topic)))
    material = (
        dict(bank.slots), words,
        {c: _others(subjects, c) for c in CATEGORIES}, {c: _others(topics, c) for c in CATEGORIES},
    )
    if len(_PREPARED) >= 16:
        _PREPARED.clear()
    entry = _PREPARED[(id(bank), split)] = _Prepared(bank, material)
    return entry


def misspell(word: str, u: UniformStream) -> str:
    """``word`` with one typo: two adjacent (different) letters swapped, a letter dropped, or doubled."""
    kind = u.integer(3)
    if kind == 0:
        swaps = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
        if swaps:
            i = swaps[u.integer(len(swaps))]
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        kind = 1  # nothing to swap ("aaaa"): drop a letter instead
    i = u.integer(len(word))
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i + 1] + word[i] + word[i + 1:]


def _misspell(text: str, spans: list[tuple[int, int]], u: UniformStream) -> str:
    """``text`` with a typo in each word at ``spans`` (in order)."""
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(misspell(text[start:end], u))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _render(template_text: str, values: dict[str, str]) -> str:
    return template_text.format_map(values) if values else template_text


def _typo_spans(variant: TextVariant) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Where the words that may take a typo stand in the variant's subject and body."""
    return _word_spans(variant.subject), _word_spans(variant.body)


def _word_spans(text: str) -> list[tuple[int, int]]:
    # all-capitals words are codes, acronyms or shouting the customer meant (SPRING20, URGENT, API)
    return [m.span() for m in _WORD.finditer(text) if not m.group().isupper()]


def _slots(text: str) -> tuple[str, ...]:
    return tuple(sorted(set(SLOT_PATTERN.findall(text))))


def second_topic(body: str) -> str | None:
    """A body as the second issue of another ticket: one paragraph, greeting and sign-off left out."""
    text = " ".join(line.strip() for line in body.splitlines() if line.strip())
    text = _SIGN_OFF.sub("", _GREETING.sub("", text)).strip()
    return text[0].upper() + text[1:] if text else None


def _lower_first(text: str) -> str:
    """``text`` as it reads after "Also, ": first letter in lower case unless it must stay."""
    return text if _KEEPS_CAPITAL.match(text) else text[0].lower() + text[1:]


def _others(by_category: dict[str, list], category: str) -> list:
    return [item for other in CATEGORIES if other != category for item in by_category[other]]
