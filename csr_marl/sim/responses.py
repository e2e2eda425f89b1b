"""The deterministic reply rubric: how ``respond_user(message)`` is graded, 0.0 to 0.5.

A resolver or the escalation desk closes a ticket with a reply. :func:`grade_reply` grades the text
against the ticket: what the customer wrote (``slot_values``, ``customer``), what the tools revealed
(``revealed``), what was done (``done``) and whether that is everything the case needs
(``resolvable()``). The vocabulary is keyed by tool and fact value, the playbook's keys
(:mod:`.reply_wording`), never by template, so any ticket of any bank is graded the same way.
Matching is case-insensitive and tolerant of punctuation: ``#4821357``, ``order 4821357``,
``$84.99``, ``84.99 USD`` and ``INV-123456`` / ``invoice 123456`` all count.

**Parts** (their weights sum to :data:`MAX_SCORE` = 0.5; a part is earned whole or lost whole, except
the resolution, which is earned in proportion):

=================== ====== ==================================================================================
part                weight earned when
=================== ====== ==================================================================================
``name``            0.05   the reply addresses the customer by name (``ticket.customer``)
``case_id``         0.05   it names one of the ticket's identifiers: order, invoice or tracking id, case ref
``amount``          0.05   it names the amount when money is involved: the ticket has an ``amount`` and is a
                           billing case or a refund tool was used
``resolution``      0.15   *only when the ticket is resolvable*: a share for each thing the reply must state --
                           every work tool in ``done`` (refund: "refunded"/"credited"; ``update_shipping``:
                           "trace"/"expedite" for a delayed parcel, "reship"/"replacement" for a lost or
                           damaged one, "redirect" for a wrong address, "warranty replacement" for faulty
                           hardware; reset; engineers/fix; fraud review; recovery; approval; legal) and every
                           revealed value that calls for no action, which the reply must explain (a pending
                           authorization hold, a settled charge, a known outage and its status page,
                           settings instructions for ``user_error``, "update" for ``outdated_version``, ...)
``apology``         0.04   the customer is not upset (:func:`is_upset`), or the reply apologises
``no_blame``        0.04   no blame: "your fault", "you should have", "you failed to", "user error", ...
``courtesy``        0.02   thanks or politeness: "thank", "please", "appreciate", "regards", ...
``no_false_refund`` 0.05   no refund stated as made or started ("refunded", "we will refund", "refund issued")
                           unless ``initiate_refund`` or ``approve_refund`` was used (or the revealed
                           ``payment_status`` is ``refund_pending``: that refund exists)
``no_false_fix``    0.05   no replacement/reshipment/redirect/trace, account reset, engineering fix, fraud,
                           recovery or legal review claimed without the tool that does it
=================== ====== ==================================================================================

A part that does not apply (no identifier, no amount, nothing to state) is earned. Action statements and
claims count only in clauses without a negation ("we could not refund" claims nothing). What the
resolution asks for is what only reading and the lookups reveal: each revealed value, in its own
words (a pending hold, a duplicate capture, a lost parcel, ...), and each action taken.

**Findings carry values** (scoring v3): where the bank writes a detail for a finding (the record its
lookup shows, ``ticket.details``: :mod:`.fact_details`), the finding's share of the resolution is
earned only when the reply gives one of the detail's values -- a date ("June 22", "Jun 22nd", "22
June", "6/22"), a six-digit record number or a version -- and :data:`NAMED_WITHOUT_VALUE` (0) of it
when the finding is only named. A finding without a detail (another bank's) counts by its words.

**Denials are claims** (scoring v3): a reply is read for what it asserts about each finding. A clause
with a negation that names a finding denies it, unless the negation lies inside the finding's own
words ("the refund had not been issued" affirms ``refund_not_issued``). A denied finding earns nothing.

**Only news earns** (scoring v3): when a lookup revealed something, the ``name``, ``case_id``,
``amount`` and ``resolution`` parts, and the ``apology`` owed to an upset customer, count in
proportion to the share of the findings the reply states (or of everything it must state, when that
is smaller), so a reply that copies the name, order and
amount, states the actions taken and apologises, without a finding's value, earns what the canned
reply earns. When nothing was revealed, the identifiers count in proportion to the share of the
actions it states (scoring v2).

**Guards** multiply the sum of the parts (``score = sum(parts) * factor``, clipped to [0, 0.5]; the
product of the factors that apply is ``ReplyGrade.factor``, each with a note):

* ``unfinished`` x0.5 -- the ticket is not resolvable: a polished reply to an unfinished ticket earns
  little (its resolution part is 0 too);
* ``too short`` x0.2 -- fewer than :data:`MIN_WORDS` (12) words; ``too long`` x0.5 -- over
  :data:`MAX_WORDS` (300);
* ``stuffing`` x0.3 -- rubric vocabulary is more than 30% of the words (at least 5 hits), a content word
  makes up 10% of the reply (5 times or more), or a three-word phrase repeats 3 times;
* ``shouting`` x0.5 -- "!!", two or more words of 4+ capitals (acronyms such as USPS or GDPR aside), or
  over 60% capital letters;
* ``false findings`` x0.2 -- the reply names, affirmed or denied, findings of two or more values the
  lookups did not reveal for this ticket (a "pending hold" on a duplicate capture, "no sign of a
  backorder" on a payment; a finding's words or its own name, "customs hold"): a reply that lists every
  possible finding, in either polarity, is noise;
* ``denies a finding`` x0.2 -- the reply denies one of the ticket's own findings ("there was no
  duplicate charge" when the lookup found a duplicate capture): a false claim;
* ``guessed values`` x0.2 -- two or more dates, six-digit record numbers or versions that no lookup of
  this ticket showed and the customer never wrote;
* ``echo`` x0.2 -- at least half of the reply's three-word phrases come from what the customer said:
  their message or any answer to a question (an agent's own reply only: the documented reply below is
  the environment's wording).

**Upset** (:func:`is_upset`): sentiment below :data:`UPSET_BELOW` (-0.3, the default of
``customers.sentiment.upset_below``), a returning contact (``contact > 0``), or anger or urgency in the
customer's text: one of the template's priority cues ("charged twice", "site is down"), words such as
"unacceptable", "ridiculous", "asap", "immediately", "!!", or a shouted word (4+ capitals, not an acronym
or one of the ticket's own values such as a promo code).

**The documented reply** (:func:`documented_reply`) is what agents that cannot write (vector-mode RL
agents) say, built from the visible state only: "Hi {name}," an apology if the customer is upset, "I
have looked into {order #id | invoice id | shipment id | case ref} [and the payment of ${amount}].", one
sentence per revealed fact in the playbook's words (with "Our records show: {detail}." after it when
the lookup showed a record), one per work tool done, then "Thank you for your
patience, and please reply ...". It never claims more than was done, so it scores high (0.5 on a
resolvable ticket after the right workflow) and low when steps are missing. :func:`grade_documented`
caches its grade by everything the grade depends on, so the core pays a dict lookup per close.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ..config.domain import DIAGNOSTIC_TOOLS
from ..config.scenario import Sentiment
from ..config.tickets import Template
from . import reply_wording as wording
from .fact_details import MONTHS, Detail, date_key, dates_in, records_in, states_value, versions_in
from .tickets import Ticket

MAX_SCORE = 0.5
WEIGHTS: dict[str, float] = {
    "name": 0.05, "case_id": 0.05, "amount": 0.05,  # facts 0.15
    "resolution": 0.15,
    "apology": 0.04, "no_blame": 0.04, "courtesy": 0.02,  # tone 0.10
    "no_false_refund": 0.05, "no_false_fix": 0.05,  # promises 0.10
}
UPSET_BELOW: float = Sentiment.model_fields["upset_below"].default
MIN_WORDS, MAX_WORDS = 12, 300
GUARDS: dict[str, float] = {
    "unfinished": 0.5, "too short": 0.2, "too long": 0.5, "stuffing": 0.3, "shouting": 0.5,
    "false findings": 0.2, "denies a finding": 0.2, "guessed values": 0.2, "echo": 0.2,
}
#: The share of a finding's credit a reply earns naming it without any of the values its lookup showed.
NAMED_WITHOUT_VALUE = 0.0
#: The share of a reply's three-word phrases found in the customer's text that makes it an echo.
ECHO_SHARE = 0.5
ID_SLOTS: tuple[str, ...] = ("order_id", "invoice_id", "tracking_id", "ticket_ref")
ACRONYMS: frozenset[str] = frozenset(
    {"USPS", "FEDEX", "GDPR", "HTTP", "HTTPS", "IFTTT", "CCPA", "HIPAA", "SMTP", "JSON", "HDMI", "WIFI"}
)


@dataclass(frozen=True)
class ReplyGrade:
    """A reply's grade: ``score = clip(sum(parts) * factor, 0, MAX_SCORE)``; one note per point lost.

    Grades from :func:`grade_documented` are shared by the cache: treat ``parts`` as read-only.
    """

    score: float
    parts: dict[str, float]
    notes: tuple[str, ...]
    factor: float = 1.0


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    size: int


@lru_cache(maxsize=4096)
def _alternation(stems: tuple[str, ...], start: str = r"\b") -> re.Pattern[str]:
    """``\\b(?:stem|stem|...)`` (``start``, then the alternation), the stems grouped by their first
    letter when each begins with a plain one: only the stems of the letter at hand can match there, and
    they keep their order, so every match is the same, but the engine tries one group per position
    instead of every stem. Built once per stems."""
    groups: dict[str, list[str]] = {}
    for stem in stems:
        if not (stem[:1].isalpha() and stem[:1].isascii() and stem[1:2] not in _QUANTIFIERS) or _splits(stem):
            return re.compile(start + "(?:" + "|".join(stems) + ")")
        groups.setdefault(stem[0], []).append(stem[1:])
    return re.compile(start + "(?:" + "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items()) + ")")


_QUANTIFIERS = frozenset("?*+{")


def _splits(stem: str) -> bool:
    """Whether ``stem`` has a ``|`` outside its groups and classes (it is then two alternatives)."""
    depth, in_class, escaped = 0, False, False
    for char in stem:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_DIGITS = re.compile(r"\d+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_DIGITS_ONLY_BYTES = bytes(b if 48 <= b <= 57 else 32 for b in range(256))  # translate: non-digits to spaces
_NOT_ALNUM_BYTES = bytes(b for b in range(256) if not (97 <= b <= 122 or 48 <= b <= 57))  # translate deletes these
# Clause breaks: a run of punctuation not before a digit ("$84.99" stays whole), line breaks, or a
# contrasting "but"/"however"/...: ``(?:[.!?;:,](?!\d))+|\n+|\s(?:but|however|although|though)\s``,
# written to begin with one character class (the three alternatives told apart by what it matched), so
# the engine skips ahead to punctuation and spaces instead of trying every position. Same matches.
_CLAUSE = re.compile(
    r"[.!?;:,\s](?:(?<=[.!?;:,])(?!\d)(?:[.!?;:,](?!\d))*|(?<=\n)\n*|(?<=\s)(?:but|however|although|though)\s)"
)
# ``\b(?:not|no|never|cannot|nothing|unable)\b|n't\b`` with each alternative starting at its letter
# (the word boundary checked behind it), for the same reason. Same matches.
_NEGATION = re.compile(r"n(?<!\wn)(?:ot|o|ever|othing)\b|c(?<!\wc)annot\b|u(?<!\wu)nable\b|n't\b")
# Four or more capitals between word boundaries (``\b[A-Z]{4,}\b``), written to begin with a capital so
# the regex engine skips ahead to the capitals instead of trying every position (2.5x faster, same matches).
_SHOUT_WORD = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]{3,}(?!\w)")
_NOT_A_LETTER = bytes(b for b in range(256) if not (65 <= b <= 90 or 97 <= b <= 122))  # bytes.translate deletes these
_NOT_A_CAPITAL = bytes(b for b in range(256) if not 65 <= b <= 90)
_APOLOGY = _alternation(wording.APOLOGY_WORDS)
_COURTESY = _alternation(wording.COURTESY_WORDS)
_BLAME = _alternation(tuple(re.escape(p) for p in wording.BLAME_PHRASES), "")
_ANGER = re.compile(
    r"\b(?:unacceptable|ridiculous|furious|angry|outraged?|frustrat\w*|disappointed|terrible|horrible|"
    r"awful|worst|scam\w*|asap|immediately|right now|urgent\w*|fed up|sick of)\b|!!|\?!|!\?"
)
# Text every match of _ANGER contains: a text without any of them cannot match, which a few substring
# tests tell faster than the regex (it tries every position of the text).
_ANGER_LITERALS = (
    "unacceptable", "ridiculous", "furious", "angry", "outrage", "frustrat", "disappointed", "terrible",
    "horrible", "awful", "worst", "scam", "asap", "immediately", "right now", "urgent", "fed up", "sick of",
    "!!", "?!", "!?",
)
_VOCABULARY_STEMS = tuple(sorted({
    *(w for ws in wording.ACTION_WORDS.values() for w in ws), *wording.SHIPPING_ANY,
    *(w for ws in wording.FINDING_WORDS.values() for w in ws),
    *wording.APOLOGY_WORDS, *wording.COURTESY_WORDS,
}, key=len, reverse=True))
_VOCABULARY = _alternation(_VOCABULARY_STEMS)
_STOP = frozenset({
    "your", "have", "that", "this", "with", "will", "from", "been", "they", "them", "there", "what",
    "which", "would", "could", "about", "were", "when", "just", "also", "into", "their", "here",
})
_Item = tuple[str, re.Pattern[str], str | None]  # (what to state, pattern, the fact it states; None: an action)


# --- upset customers -----------------------------------------------------------------------------------
def is_upset(ticket: Ticket) -> bool:
    """Whether the rubric expects an apology (module docstring, "Upset")."""
    if ticket.sentiment < UPSET_BELOW or ticket.contact > 0:
        return True
    loud = ticket.loud
    if loud is None:  # the text never changes: scan it once per ticket
        loud = ticket.loud = _sounds_upset(ticket)
    return loud


def _sounds_upset(ticket: Ticket) -> bool:
    """Anger, urgency or shouting in the customer's text (a text without slot values: looked up)."""
    text, slots, template = ticket.text, ticket.slot_values, ticket.template
    if slots:
        return _scan_upset(template, text, slots)
    entry = _FIXED_TEXTS.get((id(template), text))
    if entry is None or entry[0] is not template:  # the id of a template that is gone: scan again
        if len(_FIXED_TEXTS) >= 4096:
            _FIXED_TEXTS.clear()
        _FIXED_TEXTS[(id(template), text)] = entry = (template, _scan_upset(template, text, slots))
    return entry[1]


def _scan_upset(template: Template, text: str, slot_values: dict[str, str]) -> bool:
    low = text.lower()
    pattern, literals = _upset_pattern(template)
    for literal in literals:
        if literal in low:
            if pattern.search(low):
                return True
            break
    return _shouts(text, slot_values, 1)


_FIXED_TEXTS: dict[tuple[int, str], tuple[Template, bool]] = {}  # (template, text) -> (template, upset)


_UPSET_PATTERNS: dict[int, tuple[Template, re.Pattern[str], tuple[str, ...]]] = {}


def _upset_pattern(template: Template) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """Anger words or one of the template's priority cues, in lower-case text; and the literals one of
    which every match contains."""
    entry = _UPSET_PATTERNS.get(id(template))
    if entry is None or entry[0] is not template:  # the id of a template that is gone: rebuild
        cues = [c.lower() for c in template.priority.cues]
        pattern = re.compile("|".join([_ANGER.pattern, *(re.escape(c) for c in cues)]))
        _UPSET_PATTERNS[id(template)] = entry = (template, pattern, (*_ANGER_LITERALS, *cues))
    return entry[1], entry[2]


def _shouts(text: str, slot_values: dict[str, str], words_needed: int) -> bool:
    return _shouted(_SHOUT_WORD.findall(text), slot_values, words_needed)


def _shouted(words: tuple[str, ...] | list[str], slot_values: dict[str, str], words_needed: int) -> bool:
    """Whether ``words_needed`` of ``words`` (runs of 4+ capitals) are shouting: not an acronym and not
    part of one of the ticket's own values."""
    found = 0
    for word in words:
        if word not in ACRONYMS and not any(word in value for value in slot_values.values()):
            found += 1
            if found >= words_needed:
                return True
    return False


# --- grading -------------------------------------------------------------------------------------------
def grade_reply(ticket: Ticket, message: object) -> ReplyGrade:
    """Grade ``message`` (a str: anything else raises TypeError) as the reply that closes ``ticket``
    (module docstring)."""
    if not isinstance(message, str):
        raise TypeError(f"respond_user message must be a string, got {type(message).__name__}")
    return _grade(ticket, message, echo_guard=True)


class _Reading:
    """What the rubric reads off a reply's text: its lower case, its words, the clauses it affirms
    (those without a negation, joined by " | "), and what tone and guards look for. A reading of a
    sentence (:func:`_read_sentence`) also keeps its clauses and which hold a negation, to be joined
    with the readings of the sentences beside it (:func:`_read_sentences`). Sequences are tuples: the
    collector stops tracking a tuple of strings, so a cache of readings costs its full passes little."""

    __slots__ = ("low", "words", "affirmed", "denied", "apology", "blame", "courtesy", "vocabulary", "bangs",
                 "shouted", "letters", "capitals", "clauses", "negated")

    def __init__(
        self, low: str, words: tuple[str, ...], affirmed: str, apology: bool, blame: str | None,
        courtesy: bool, vocabulary: int, bangs: bool, shouted: tuple[str, ...], letters: int, capitals: int,
    ) -> None:
        self.low = low
        self.words = words
        self.affirmed = affirmed
        self.apology = apology  # an apology word
        self.blame = blame  # the first blame phrase, as written (None: none)
        self.courtesy = courtesy  # thanks or politeness
        self.vocabulary = vocabulary  # rubric keywords (stuffing)
        self.bangs = bangs  # "!!"
        self.shouted = shouted  # runs of 4+ capitals, acronyms and the ticket's values not yet set aside
        self.letters = letters  # ASCII letters
        self.capitals = capitals  # of which capitals
        self.clauses: tuple[str, ...] = ()
        self.negated: tuple[bool, ...] = ()
        self.denied = ""  # the clauses with a negation, joined by " | "


def _read(message: str) -> _Reading:
    """The reading of a whole reply."""
    low = message.lower()
    clauses = _CLAUSE.split(low)
    denied = ""
    if _NEGATION.search(low):  # a reply with no negation anywhere has none in any clause
        affirmed = " | ".join(c for c in clauses if c and not _NEGATION.search(c))
        denied = " | ".join(c for c in clauses if c and _NEGATION.search(c))
    else:
        affirmed = " | ".join(c for c in clauses if c)
    reading = _reading(message, low, affirmed)
    reading.denied = denied
    return reading


def _reading(message: str, low: str, affirmed: str) -> _Reading:
    blame = _BLAME.search(low)
    ascii_bytes = message.encode("ascii", "ignore")  # only ASCII letters count
    return _Reading(
        low, tuple(_WORD.findall(low)), affirmed, _APOLOGY.search(low) is not None,
        None if blame is None else blame.group(0), _COURTESY.search(low) is not None,
        len(_VOCABULARY.findall(low)), "!!" in message, tuple(_SHOUT_WORD.findall(message)),
        len(ascii_bytes.translate(None, _NOT_A_LETTER)), len(ascii_bytes.translate(None, _NOT_A_CAPITAL)),
    )


_SENTENCE_READINGS: dict[str, _Reading] = {}
_SENTENCE_LIMIT = 16384  # sentence readings kept (the documented reply's sentences; the greeting and the
# reference line name the customer's values, so most of a long run's sentences are those two)
_CLAUSE_ENDS = frozenset(".!?;:,")
# What a sentence must not begin with to be read apart from the one before it: a space or a contrasting
# word, which the clause break could take together with the space that joins the two.
_JOINS_BACK = re.compile(r"\s|(?:but|however|although|though)\s")


def _read_sentence(sentence: str) -> _Reading | None:
    """The reading of one sentence, kept by its text; None if it cannot be read apart from its
    neighbours (it begins with a space or a contrasting word, or ends without a clause break)."""
    reading = _SENTENCE_READINGS.get(sentence)
    if reading is not None:
        return reading
    low = sentence.lower()
    if not sentence or sentence[-1] not in _CLAUSE_ENDS or _JOINS_BACK.match(low):
        return None
    clauses = _CLAUSE.split(low)
    if _NEGATION.search(low):
        negated = [_NEGATION.search(c) is not None for c in clauses]
    else:
        negated = [False] * len(clauses)
    reading = _reading(sentence, low, " | ".join(c for c, no in zip(clauses, negated) if c and not no))
    reading.clauses, reading.negated = tuple(clauses), tuple(negated)
    reading.denied = " | ".join(c for c, no in zip(clauses, negated) if c and no)
    if len(_SENTENCE_READINGS) >= _SENTENCE_LIMIT:
        _SENTENCE_READINGS.clear()
    _SENTENCE_READINGS[sentence] = reading
    return reading


def _read_sentences(sentences: list[str]) -> _Reading:
    """``_read(" ".join(sentences))``, from each sentence's reading (kept by its text).

    Exact when every sentence ends with a clause break (``.!?;:,``) and none after the first begins
    with a space or a contrasting word: no word, number, capital run, negation, keyword, apology,
    courtesy or blame phrase of the rubric holds a clause break (tests/test_responses.py checks the
    phrases), so nothing it finds spans two sentences, and the clause break that ends one sentence
    splits the joined text where it split the sentence. Otherwise the joined text is read whole."""
    readings = []
    for sentence in sentences:
        reading = _read_sentence(sentence)
        if reading is None:
            return _read(" ".join(sentences))
        readings.append(reading)
    words: list[str] = []
    clauses: list[str] = []
    negated: list[bool] = []
    shouted: list[str] = []
    blame: str | None = None
    apology = courtesy = bangs = False
    vocabulary = letters = capitals = 0
    for reading in readings:
        words += reading.words
        if clauses:  # the space joins this sentence's first clause to the last one so far
            clauses[-1] = clauses[-1] + " " + reading.clauses[0]
            negated[-1] = negated[-1] or reading.negated[0]
            clauses += reading.clauses[1:]
            negated += reading.negated[1:]
        else:
            clauses += reading.clauses
            negated += reading.negated
        if blame is None:
            blame = reading.blame
        apology = apology or reading.apology
        courtesy = courtesy or reading.courtesy
        bangs = bangs or reading.bangs
        shouted += reading.shouted
        vocabulary += reading.vocabulary
        letters += reading.letters
        capitals += reading.capitals
    joined = _Reading(
        " ".join([reading.low for reading in readings]), tuple(words),
        " | ".join([c for c, no in zip(clauses, negated) if c and not no]),
        apology, blame, courtesy, vocabulary, bangs, tuple(shouted), letters, capitals,
    )
    joined.denied = " | ".join([c for c, no in zip(clauses, negated) if c and no])
    return joined


def _grade(ticket: Ticket, message: str, echo_guard: bool) -> ReplyGrade:
    return _graded(ticket, _read(message), message if echo_guard else None)


def _graded(ticket: Ticket, reading: _Reading, echoed: str | None) -> ReplyGrade:
    """The grade of a reply read as ``reading``; ``echoed``: the reply, to be checked against the
    customer's own words (None: not checked)."""
    low, words, affirmed = reading.low, reading.words, reading.affirmed
    slots = ticket.slot_values
    done = ticket.done
    parts = dict(WEIGHTS)
    notes: list[str] = []

    def lose(part: str, note: str, keep: float = 0.0) -> None:
        parts[part] = round(WEIGHTS[part] * keep, 6)
        notes.append(note)

    # Required facts.
    name = ticket.customer.lower()
    if name and not (name in words or re.search(rf"\b{re.escape(name)}\b", low)):
        lose("name", "does not address the customer by name")
    ids = [slots[k] for k in ID_SLOTS if k in slots]
    if ids and not _names_an_id(ids, low):
        lose("case_id", "does not name the order, invoice or tracking id")
    amount = slots.get("amount")
    if amount is not None and (ticket.true_category == "billing" or not wording.REFUND_TOOLS.isdisjoint(done)):
        if not _names_amount(amount, low):
            lose("amount", "does not state the amount")
    # The resolution, only for a resolvable ticket.
    resolvable = ticket.resolvable()
    stated = 0.0  # the share of what the reply must state that it states
    findings: float | None = None  # the share of the findings it states (None: nothing was found)
    if not resolvable:
        lose("resolution", "the ticket is not resolved: required steps are missing")
    else:
        items = _resolution_items(tuple(done), tuple(ticket.revealed.items()))
        missing: list[str] = []
        credit = found = 0.0
        n_found = 0
        for what, pattern, fact in items:
            if fact is None:  # an action taken: stated in an affirmed clause
                share = 1.0 if pattern.search(affirmed) else 0.0
            else:
                share = _item_credit(reading, pattern, ticket.details.get(fact))
                found += share
                n_found += 1
            credit += share
            if share < 1.0:
                missing.append(what if share == 0.0 else f"{what} (named without the values the lookup showed)")
        stated = credit / len(items) if items else 1.0
        if n_found:
            findings = found / n_found
        if missing:
            lose("resolution", f"does not state: {', '.join(missing)}", stated)
    # Tone.
    if not reading.apology and is_upset(ticket):
        lose("apology", "no apology to an upset customer")
    if reading.blame is not None:
        lose("no_blame", f"blames the customer ({reading.blame!r})")
    if not reading.courtesy:
        lose("courtesy", "no thanks or please")
    # What only reading earns (scoring v3): the identifiers, the resolution and an apology owed to an
    # upset customer count in proportion to what the reply states of the findings (with their values),
    # or of everything it must state when nothing was looked up: "sorry" added to a canned reply buys
    # nothing.
    # Only news earns: the identifiers count in proportion to what the reply states (of the findings
    # and of everything), the resolution and an apology owed in proportion to the findings it states.
    if findings is None:
        findings = 1.0  # nothing was found to state: the identifiers count beside the actions (v2)
    for part, share in (("name", min(findings, stated)), ("case_id", min(findings, stated)),
                        ("amount", min(findings, stated)), ("resolution", findings),
                        ("apology", findings if is_upset(ticket) else 1.0)):
        if share < 1.0 and parts[part]:
            parts[part] = round(parts[part] * share, 6)
    if min(findings, stated) == 0.0:
        notes.append("states nothing the lookups found: identifiers, resolution and apology earn nothing"
                     if findings == 0.0 else "names the customer's details but states nothing found or done")
    # Forbidden promises.
    revealed = ticket.revealed
    for claim, (tools, stems, pattern) in wording.CLAIMS.items():
        allowed = wording.CLAIM_ALLOWED_BY.get(claim)
        if not tools.isdisjoint(done) or (allowed and revealed.get(allowed[0]) == allowed[1]):
            continue
        if any(stem in affirmed for stem in stems) and pattern.search(affirmed):
            part = "no_false_refund" if claim == "refund" else "no_false_fix"
            if parts[part]:
                lose(part, f"claims a {claim} that was not made")
    # Guards.
    factor = 1.0
    guards = list(_guards(reading, slots, resolvable))
    false_findings = _false_findings(low, ticket.revealed, done)
    if len(false_findings) >= 2:
        guards.append(("false findings", f"names findings this ticket does not have ({', '.join(false_findings[:4])})"))
    denied = _denied_findings(reading, ticket)
    if denied:
        guards.append(("denies a finding", f"denies what this ticket has ({', '.join(denied[:4])})"))
    guessed = _guessed_values(low, ticket)
    if len(guessed) >= 2:
        guards.append(("guessed values", f"dates or record numbers no lookup showed ({', '.join(guessed[:4])})"))
    if echoed is not None and _echoes(words, customer_words(ticket)):
        guards.append(("echo", "repeats what the customer said"))
    for guard, why in guards:
        factor *= GUARDS[guard]
        notes.append(f"{guard}: {why} (score x{GUARDS[guard]})")
    raw = sum(parts.values())
    score = round(min(MAX_SCORE, max(0.0, raw * factor)), 6)
    return ReplyGrade(score=score, parts=parts, notes=tuple(notes), factor=factor)


def _item_credit(reading: _Reading, pattern: re.Pattern[str], detail: Detail | None) -> float:
    """The share of a finding's resolution item a reply earns: 0 when denied; with a detail (what the lookup showed), 1 when one of its values
    is given, :data:`NAMED_WITHOUT_VALUE` when only named; without one, 1 when named."""
    affirmed, denied = _polarity(reading, pattern)
    if denied:
        return 0.0
    if detail is not None and detail.values:
        if states_value(detail, reading.low):
            return 1.0
        return NAMED_WITHOUT_VALUE if affirmed else 0.0
    return 1.0 if affirmed else 0.0


def _polarity(reading: _Reading, pattern: re.Pattern[str]) -> tuple[bool, bool]:
    """Whether ``pattern`` is affirmed and whether it is denied in the reply: found in a clause without
    a negation, or in a clause with one -- a negation inside the words found is their own ("refund
    not issued" affirms that finding), one outside them denies it ("no sign of a duplicate charge")."""
    affirmed = pattern.search(reading.affirmed) is not None
    denied = False
    if reading.denied:
        for clause in reading.denied.split(" | "):
            rest, found = pattern.subn(" ", clause)
            if found:
                if _NEGATION.search(rest):
                    denied = True
                else:
                    affirmed = True
    return affirmed, denied


def _denied_findings(reading: _Reading, ticket: Ticket) -> list[str]:
    """The ticket's own findings (its hidden fact values, looked up or not) that the reply denies."""
    if not reading.denied:
        return []
    return [value.replace("_", " ") for value in ticket.facts.values()
            if _polarity(reading, _finding_pattern(value))[1]]


def _finding_pattern(value: str) -> re.Pattern[str]:
    """What names the finding ``value``: its vocabulary and its own name ("duplicate capture")."""
    stems = wording.FINDING_WORDS.get(value) or wording.ACTION_FINDING_WORDS.get(value) or ()
    return _alternation((*stems, re.escape(value.replace("_", " "))))


def customer_words(ticket: Ticket) -> str:
    """Everything the customer has said on the ticket: their message and each answer to a question."""
    if not ticket.dialogue:
        return ticket.text
    return "\n".join([ticket.text, *(answer for _, answer in ticket.dialogue)])


def _guessed_values(low: str, ticket: Ticket) -> list[str]:
    """Dates, six-digit record numbers and versions in the reply that no lookup of this ticket showed
    and the customer never wrote: what a reply that guesses the record looks like."""
    dates, records, versions = dates_in(low), records_in(low), versions_in(low)
    if not (dates or records or versions):
        return []
    shown = [value for detail in ticket.details.values() for _, value in detail.values]
    theirs = customer_words(ticket).lower()
    known_dates = {date_key(v) for v in shown if v[:1].isalpha()} | dates_in(theirs)
    known_records = {v for v in shown if v.isdigit()} | records_in(theirs) | {
        run for value in ticket.slot_values.values() for run in _DIGITS.findall(value)
    }
    known_versions = {v for v in shown if v.count(".") == 2} | versions_in(theirs)
    guessed = [f"{MONTHS[m]} {d}" for m, d in sorted(dates - known_dates)]
    guessed += sorted(records - known_records) + sorted(versions - known_versions)
    return guessed


def _false_findings(low: str, revealed: dict[str, str], done: tuple[str, ...]) -> list[str]:
    """Finding values a reply names, affirmed or denied, that the lookups did not reveal: a stem
    counts only when no revealed value or action taken shares it."""
    return [value for value, pattern, anchors in _false_finding_patterns(tuple(revealed.values()), done)
            if (anchors is None or any(anchor in low for anchor in anchors)) and pattern.search(low)]


_FALSE_PATTERNS: dict[tuple[frozenset[str], frozenset[str]], list[tuple[str, re.Pattern[str], tuple[str, ...] | None]]] = {}


def _false_finding_patterns(
    revealed: tuple[str, ...], done: tuple[str, ...]
) -> list[tuple[str, re.Pattern[str], tuple[str, ...] | None]]:
    """(value, pattern of its stems that would be false here, the stems' literal beginnings) for each
    finding value not revealed; worked out once per set of revealed values and set of steps done
    (their order changes nothing here). The pattern can only match where one of the beginnings
    occurs (None: a stem has no literal beginning), which is cheaper to test first."""
    key = (frozenset(revealed), frozenset(done))
    patterns = _FALSE_PATTERNS.get(key)
    if patterns is not None:
        return patterns
    true_stems = {stem for value in revealed for stem in wording.FINDING_WORDS.get(value, ())}
    true_stems.update(stem for tool in done for stem in wording.ACTION_WORDS.get(tool, ()))
    if "update_shipping" in done:
        true_stems.update(wording.SHIPPING_ANY)
    # What the playbook's own sentences for the true findings and actions say is true as well. Each
    # sentence ends in punctuation, so no stem matches across two of them: the stems one sentence
    # states are worked out once per sentence.
    for sentence in (
        [wording.FINDINGS.get(value, "") for value in revealed]
        + [wording.ACTIONS.get(tool, "") for tool in done]
        + ([*wording.SHIPPING_ACTIONS.values()] if "update_shipping" in done else [])
    ):
        true_stems.update(_stems_stated(sentence))
    true_text = " ".join(
        [wording.FINDINGS.get(value, "") for value in revealed] + [wording.ACTIONS.get(tool, "") for tool in done]
    ).lower()
    patterns = []
    for value in (*wording.FINDING_WORDS, *wording.ACTION_FINDING_WORDS):
        if value in revealed:
            continue
        stems = wording.FINDING_WORDS.get(value, ())
        name = value.replace("_", " ")
        if " " in name and name not in true_text:  # its own name, when it is a phrase
            stems = (*stems, re.escape(name))
        false = tuple(stem for stem in stems if stem not in true_stems)
        if false:
            patterns.append((value.replace("_", " "), *_alternation_of(false)))
    if len(_FALSE_PATTERNS) > 4096:
        _FALSE_PATTERNS.clear()
    _FALSE_PATTERNS[key] = patterns
    return patterns


_STATED: dict[str, frozenset[str]] = {}
_ALTERNATIONS: dict[tuple[str, ...], tuple[re.Pattern[str], tuple[str, ...] | None]] = {}


def _stems_stated(sentence: str) -> frozenset[str]:
    """The finding stems a playbook sentence states (``\\b`` + stem found in it, lower-cased)."""
    stated = _STATED.get(sentence)
    if stated is None:
        low = sentence.lower()
        stated = _STATED[sentence] = frozenset(
            stem for stems in wording.FINDING_WORDS.values() for stem in stems if re.search(r"\b" + stem, low)
        )
    return stated


_METACHARACTERS = frozenset("()[]{}\\.*+?|^$")


def _literal_start(stem: str) -> str:
    """The literal text every match of the regular expression ``stem`` begins with ("" if none): its
    characters up to the first metacharacter, less one made optional by ``?``, ``*`` or ``{``."""
    end = 0
    while end < len(stem) and stem[end] not in _METACHARACTERS:
        end += 1
    if end < len(stem) and stem[end] in "?*{":
        end -= 1
    return stem[:max(end, 0)]


def _alternation_of(stems: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...] | None]:
    """:func:`_alternation` of ``stems`` and their literal beginnings (None if one has none), worked
    out once per tuple of stems."""
    entry = _ALTERNATIONS.get(stems)
    if entry is None:
        anchors = tuple(_literal_start(stem) for stem in stems)
        entry = _ALTERNATIONS[stems] = (_alternation(stems), None if "" in anchors else anchors)
    return entry


def _echoes(words: tuple[str, ...], customer_text: str) -> bool:
    """Whether at least :data:`ECHO_SHARE` of the reply's three-word phrases come from the customer."""
    phrases = list(zip(words, words[1:], words[2:]))
    if len(phrases) < 4:
        return False
    theirs = _WORD.findall(customer_text.lower())
    known = set(zip(theirs, theirs[1:], theirs[2:]))
    return sum(phrase in known for phrase in phrases) >= ECHO_SHARE * len(phrases)


def _names_an_id(values: list[str], low: str) -> bool:
    """Whether one of ``values`` (e.g. 4821357, INV-123456, 1Z...) is named in ``low``: by its longest
    digit run when that has four digits or more, else in full (letters and digits only). ``low``'s own
    digit runs and letters are read once, when a value needs them."""
    runs: set[str] | None = None
    compact_low: str | None = None
    for value in values:
        digits = _DIGITS.findall(value)
        core = max(digits, key=len) if digits else ""
        if len(core) >= 4:
            if runs is None:
                runs = set(_digit_runs(low))
            if core in runs:
                return True
            continue
        compact = _letters_and_digits(value.lower())
        if compact:
            if compact_low is None:
                compact_low = _letters_and_digits(low)
            if compact in compact_low:
                return True
    return False


def _digit_runs(low: str) -> list[str]:
    """``_DIGITS.findall(low)``; for ASCII text one pass of bytes.translate (every other byte a space)
    and a split, instead of the regex trying every position."""
    if low.isascii():
        return low.encode("ascii").translate(_DIGITS_ONLY_BYTES).decode("ascii").split()
    return _DIGITS.findall(low)


def _letters_and_digits(low: str) -> str:
    """``low`` with every character but a-z and 0-9 removed (ASCII text: one pass of bytes.translate)."""
    if low.isascii():
        return low.encode("ascii").translate(None, _NOT_ALNUM_BYTES).decode("ascii")
    return _NOT_ALNUM.sub("", low)


def _names_amount(amount: str, low: str) -> bool:
    try:
        target = float(amount.replace(",", "").lstrip("$"))
    except ValueError:
        return amount.lower() in low
    return any(abs(float(n.replace(",", "")) - target) < 0.005 for n in _NUMBER.findall(low))


_ITEMS: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], list[_Item]] = {}


def _resolution_items(done: tuple[str, ...], revealed: tuple[tuple[str, str], ...]) -> list[_Item]:
    """What a reply must state: each work tool done, and each revealed value that needs explaining."""
    key = (done, revealed)
    items = _ITEMS.get(key)
    if items is not None:
        return items
    facts = dict(revealed)
    items = []
    for tool in done:
        if tool == "update_shipping":
            value = facts.get("order_status") or facts.get("device_state") or ""
            stems = wording.SHIPPING_WORDS.get(value, wording.SHIPPING_ANY)
        elif tool in wording.ACTION_WORDS and tool not in DIAGNOSTIC_TOOLS:
            stems = wording.ACTION_WORDS[tool]
        else:
            continue  # diagnostics are stated through what they revealed; ask_customer is talk
        items.append((tool.replace("_", " "), _alternation(stems), None))
    for fact, value in revealed:
        finding = wording.FINDING_WORDS.get(value) or wording.ACTION_FINDING_WORDS.get(value)
        if finding is None and value not in wording.FINDINGS:  # a value of another bank: its own words
            finding = tuple(re.escape(w) for w in value.split("_") if len(w) >= 4) or (re.escape(value),)
        elif finding is not None:  # the value named as such ("duplicate capture") states it too
            finding = (*finding, re.escape(value.replace("_", " ")))
        if finding is not None:
            items.append((f"{fact.replace('_', ' ')} {value.replace('_', ' ')}", _alternation(finding), fact))
    if len(_ITEMS) > 4096:
        _ITEMS.clear()
    _ITEMS[key] = items
    return items


def _guards(reading: _Reading, slots: dict[str, str], resolvable: bool) -> Iterator[tuple[str, str]]:
    """(guard, why) for each guard that applies (module docstring, "Guards")."""
    words = reading.words
    n = len(words)
    if not resolvable:
        yield "unfinished", "the reply closes a ticket whose workflow is incomplete"
    if n < MIN_WORDS:
        yield "too short", f"{n} words, a reply needs {MIN_WORDS}"
    elif n > MAX_WORDS:
        yield "too long", f"{n} words, over {MAX_WORDS}"
    if n:
        hits = reading.vocabulary
        counts = _word_counts(words)
        top = _most_repeated(counts)
        if hits >= 5 and hits > 0.3 * n:
            yield "stuffing", f"{hits} rubric keywords in {n} words"
        elif top >= 5 and top >= 0.1 * n:
            yield "stuffing", f"a word repeated {top} times"
        elif _phrase_repeated(words, counts, 3):
            yield "stuffing", "a phrase repeated 3 times or more"
    if reading.bangs or _shouted(reading.shouted, slots, 2):
        yield "shouting", "capitals or '!!'"
    elif reading.letters >= 20 and reading.capitals > 0.6 * reading.letters:
        yield "shouting", "capitals or '!!'"


def _word_counts(words: tuple[str, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts


def _most_repeated(counts: dict[str, int]) -> int:
    """How often the most frequent word of four letters or more (not a stop word) occurs (0: none)."""
    top = 0
    for word, count in counts.items():
        if count > top and len(word) >= 4 and word not in _STOP:
            top = count
    return top


def _phrase_repeated(words: tuple[str, ...], counts: dict[str, int], times: int) -> bool:
    """Whether some three consecutive words occur ``times`` times or more (``counts``: each word's
    count). Only a phrase whose three words each occur that often can, so only those are counted."""
    seen: dict[tuple[str, str, str], int] = {}
    for i in range(len(words) - 2):
        first, second, third = words[i], words[i + 1], words[i + 2]
        if counts[first] < times or counts[second] < times or counts[third] < times:
            continue
        phrase = (first, second, third)
        count = seen.get(phrase, 0) + 1
        if count >= times:
            return True
        seen[phrase] = count
    return False


# --- the documented reply ------------------------------------------------------------------------------
def documented_reply(ticket: Ticket) -> str:
    """What an agent that cannot write says with ``respond_user``, from the visible state only."""
    return " ".join(_documented_sentences(ticket))


def macro_reply(ticket: Ticket) -> str:
    """A contact center's macro: :func:`documented_reply` without what the lookups found -- the
    customer's name, the order id and amount, an apology and the actions taken, its merge fields
    filled from the ticket's record -- the best a reply that reads nothing can say."""
    return " ".join(_documented_sentences(ticket, findings=False))


def _documented_sentences(ticket: Ticket, findings: bool = True) -> list[str]:
    """:func:`documented_reply`'s sentences (the greeting first); without ``findings``, the macro's:
    an apology to every customer, no finding, the shipping action in general words
    (:data:`MACRO_SHIPPING`)."""
    slots = ticket.slot_values
    lines = [f"Hi {ticket.customer}," if ticket.customer else "Hello,"]
    if not findings or is_upset(ticket):
        lines.append("I am sorry for the trouble this has caused you.")
    reference = next(
        (wording.ID_LABELS[k].format(slots[k]) for k in ID_SLOTS if k in slots), "your request"
    )
    amount = slots.get("amount")
    money = f"${amount}" if amount else "the full amount"
    lines.append(f"I have looked into {reference}" + (f" and the payment of {money}" if amount else "") + ".")
    found: dict[str, str] = ticket.revealed if findings else {}
    for fact, value in found.items():
        lines.append(wording.FINDINGS.get(value) or f"The {fact.replace('_', ' ')} is {value.replace('_', ' ')}.")
        detail = ticket.details.get(fact)
        if detail is not None:
            lines.append(f"Our records show: {detail.text}.")
    for tool in ticket.done:
        if tool == "update_shipping":
            value = found.get("order_status") or found.get("device_state") or ""
            lines.append(wording.SHIPPING_ACTIONS.get(value, wording.ACTIONS[tool]) if findings else MACRO_SHIPPING)
        elif tool in wording.ACTIONS:
            lines.append(wording.ACTIONS[tool].format(money=money))
    lines.append("Thank you for your patience, and please reply to this message if there is anything "
                 "else I can do for you.")
    return lines


#: The macro's sentence for ``update_shipping``: what was done to the delivery, in the general words a
#: reply that knows no finding can use (one of the rubric's shipping actions, "updated the delivery").
MACRO_SHIPPING = "I have updated the delivery with the carrier."

_DOCUMENTED: dict[tuple, ReplyGrade] = {}
_STATS = [0, 0]  # hits, misses
_CACHE_LIMIT = 65536
# The documented grade reads ``done`` only through the work tools' sentences and resolution items (in
# their order), the claims and false findings (as a set of tools) and ``resolvable``: a diagnostic tool
# has no sentence, item, claim or finding words of its own, and what it revealed is in the key. So the
# key keeps the work tools only; this holds as long as no diagnostic tool has wording of its own
# (tests/test_responses.py checks that it has none).


def grade_documented(ticket: Ticket, resolvable: bool | None = None) -> ReplyGrade:
    """The grade of :func:`documented_reply`: ``grade_reply(ticket, documented_reply(ticket))`` less the
    ``echo`` guard, which guards an agent's own words against copying the customer's; the documented
    reply is the environment's wording, never the customer's (no documented reply of the shipped banks
    echoes its ticket).

    Cached by everything that grade depends on: the category (the ``amount`` part reads it), the work
    tools done in their order (diagnostics reach the grade only through what they revealed and
    ``resolvable``), the revealed facts, upset, resolvable, and which of the name, identifiers and
    amount the ticket has (their values never change the documented reply's grade). The template, the
    case and the stage reach the grade only through those, so they are not part of the key: tickets of
    two templates of one category that did and found the same share a grade. ``resolvable`` is
    ``ticket.resolvable()`` when the caller knows it already."""
    fixed = ticket.grade_key
    if fixed is None:  # what never changes for this ticket: worked out once
        slots = ticket.slot_values
        fixed = ticket.grade_key = (
            ticket.true_category, bool(ticket.customer), "order_id" in slots, "invoice_id" in slots,
            "tracking_id" in slots, "ticket_ref" in slots, "amount" in slots,
        )
    done = ticket.done
    if DIAGNOSTIC_TOOLS.isdisjoint(done):
        work = tuple(done)
    else:
        work = tuple(tool for tool in done if tool not in DIAGNOSTIC_TOOLS)
    key = (
        fixed, work, tuple(ticket.revealed.items()), tuple(ticket.details), is_upset(ticket),
        ticket.resolvable() if resolvable is None else resolvable,
    )
    grade = _DOCUMENTED.get(key)
    if grade is not None:
        _STATS[0] += 1
        return grade
    _STATS[1] += 1
    grade = _graded(ticket, _read_sentences(_documented_sentences(ticket)), None)
    if len(_DOCUMENTED) >= _CACHE_LIMIT:
        _DOCUMENTED.clear()
    _DOCUMENTED[key] = grade
    return grade


def documented_cache_info() -> CacheInfo:
    """Hits, misses and size of :func:`grade_documented`'s cache."""
    return CacheInfo(_STATS[0], _STATS[1], len(_DOCUMENTED))


__all__ = [
    "MAX_SCORE", "ReplyGrade", "documented_cache_info", "documented_reply", "grade_documented",
    "grade_reply", "is_upset", "macro_reply",
]
