"""The ticket bank schema: templates written the way customers write, with facts and workflows.

A template has text variants with ``{slot}`` placeholders, a priority rule, and one or more *cases*:
the hidden facts that turn out to hold (drawn by weight) and what they require. What a case requires is
derived, not hand-written, from the bank's *playbook* so that the same revealed fact always calls for
the same next step:

    required resolver steps = tools that reveal the case's facts
                              + the playbook's steps for each fact value + the case's own ``steps``
    specialist steps        = the playbook's specialist steps + the case's own ``specialist``

A case with any specialist step needs the escalation desk.

**Held-out split.** A template, or one text variant of a template, may be marked ``split: test``. A
scenario draws from ``tickets.split``: ``all`` (the default: every template and variant), ``train``
(train templates, their train variants) or ``test`` (held-out templates with all their variants, and
the held-out variants of train templates), so agents and the heuristic's knowledge base (built from
the train side) can be judged on tickets they never saw. The default bank holds out, per category,
every fifth template in id order and the last text variant of every other template.

The bank's text is clean; a scenario's ``tickets.noise`` (:class:`csr_marl.config.scenario.TextNoise`)
says how the customers' own typing strays from it.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .domain import (
    CATEGORIES,
    DIAGNOSTIC_TOOLS,
    FACT_REVEALED_BY,
    PRIORITIES,
    RESOLVER_WORK_TOOLS,
    SPECIALIST_WORK_TOOLS,
    TIERS,
)

SLOT_PATTERN = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# Slots the core generates itself (ids, money, dates); any other slot needs a value list in ``slots``.
GENERATED_SLOTS: frozenset[str] = frozenset(
    {"order_id", "amount", "tracking_id", "invoice_id", "last4", "days", "ticket_ref"}
)

Category = Literal["billing", "shipping", "technical", "general"]
Priority = Literal["low", "medium", "high", "urgent"]
Split = Literal["train", "test"]  # a template's or a text variant's side of the held-out split
SPLITS = ("all", "train", "test")  # what a scenario's ``tickets.split`` may draw from
#: What a finding's detail sentence may hold (``details``; csr_marl/sim/fact_details.py draws them).
DETAIL_PLACEHOLDERS: frozenset[str] = frozenset({"date", "date2", "ref", "ref2", "version", "hub"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlaybookEntry(_Frozen):
    """What a revealed fact value calls for."""

    steps: tuple[str, ...] = ()
    specialist: tuple[str, ...] = ()


class PriorityRule(_Frozen):
    """Base priority, raised per tier and by textual cues (case-insensitive substrings)."""

    base: Priority
    tier_raise: dict[str, int] = Field(default_factory=dict)
    cues: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> "PriorityRule":
        for tier in self.tier_raise:
            if tier not in TIERS:
                raise ValueError(f"tier_raise: unknown tier {tier!r} (expected one of {TIERS})")
        return self


class TextVariant(_Frozen):
    subject: str = Field(min_length=1)
    body: str = Field(min_length=1)
    split: Split = "train"


class Case(_Frozen):
    weight: float = Field(default=1.0, gt=0)
    facts: dict[str, str] = Field(default_factory=dict)
    steps: tuple[str, ...] = ()
    specialist: tuple[str, ...] = ()


class Template(_Frozen):
    id: str = Field(min_length=1)
    category: Category
    weight: float = Field(default=1.0, gt=0)
    priority: PriorityRule
    variants: tuple[TextVariant, ...] = Field(min_length=1)
    cases: tuple[Case, ...] = Field(default=(Case(),), min_length=1)
    split: Split = "train"

    def variants_in(self, split: str) -> tuple[TextVariant, ...]:
        """The text variants a scenario drawing from ``split`` may use (module docstring)."""
        if split == "all":
            return self.variants
        if self.split == "test":
            return self.variants if split == "test" else ()
        return tuple(v for v in self.variants if v.split == split)

    @cached_property
    def slots(self) -> frozenset[str]:
        names: set[str] = set()
        for variant in self.variants:
            names.update(SLOT_PATTERN.findall(variant.subject))
            names.update(SLOT_PATTERN.findall(variant.body))
        return frozenset(names)


class Requirement(_Frozen):
    """What one case of one template needs, derived through the playbook."""

    steps: tuple[str, ...]
    specialist: tuple[str, ...]

    @property
    def needs_escalation(self) -> bool:
        return bool(self.specialist)


#: The most templates a bank may hold (the shipped bank has 72): a bank is loaded whole, and kept.
MAX_TEMPLATES = 5_000


class TicketBank(_Frozen):
    version: int = 1
    slots: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    fact_values: dict[str, tuple[str, ...]]
    playbook: dict[str, dict[str, PlaybookEntry]] = Field(default_factory=dict)
    #: What a lookup shows beside a fact value: a sentence with placeholders (DETAIL_PLACEHOLDERS),
    #: filled per ticket, that holds the values a reply needs to state the finding.
    details: dict[str, str] = Field(default_factory=dict)
    templates: tuple[Template, ...] = Field(min_length=1, max_length=MAX_TEMPLATES)

    @model_validator(mode="after")
    def _check(self) -> "TicketBank":
        for key in self.fact_values:
            if key not in FACT_REVEALED_BY:
                raise ValueError(
                    f"fact_values: unknown fact {key!r} (known: {sorted(FACT_REVEALED_BY)})"
                )
        for key, entries in self.playbook.items():
            for value, entry in entries.items():
                where = f"playbook.{key}.{value}"
                if value not in self.fact_values.get(key, ()):
                    raise ValueError(f"{where}: {value!r} is not in fact_values.{key}")
                _check_tools(where, entry.steps, entry.specialist)
        values = {value for listed in self.fact_values.values() for value in listed}
        for value, sentence in self.details.items():
            if value not in values:
                raise ValueError(f"details: {value!r} is not a value of fact_values")
            unknown = set(SLOT_PATTERN.findall(sentence)) - DETAIL_PLACEHOLDERS
            if unknown or "{}" in sentence:
                raise ValueError(
                    f"details.{value}: unknown placeholder(s) {sorted(unknown)} (known: {sorted(DETAIL_PLACEHOLDERS)})"
                )
        seen: set[str] = set()
        for i, template in enumerate(self.templates):
            where = f"templates[{i}] ({template.id})"
            if template.id in seen:
                raise ValueError(f"{where}: duplicate template id {template.id!r}")
            seen.add(template.id)
            if template.split == "train" and not template.variants_in("train"):
                raise ValueError(f"{where}: a train template needs at least one train text variant")
            for slot in template.slots - GENERATED_SLOTS:
                if not self.slots.get(slot):
                    raise ValueError(f"{where}: slot {{{slot}}} has no values in 'slots'")
            for j, case in enumerate(template.cases):
                for key, value in case.facts.items():
                    if value not in self.fact_values.get(key, ()):
                        raise ValueError(
                            f"{where}.cases[{j}].facts.{key}: {value!r} is not in fact_values.{key}"
                        )
                _check_tools(f"{where}.cases[{j}]", case.steps, case.specialist)
        for template in self.templates:
            _DETAILS[id(template)] = (template, self.details)
        return self

    def requirement(self, template: Template, case: Case) -> Requirement:
        """The resolver and specialist steps a case requires (see the module docstring)."""
        steps: list[str] = [FACT_REVEALED_BY[key] for key in sorted(case.facts)]
        specialist: list[str] = []
        for key in sorted(case.facts):
            entry = self.playbook.get(key, {}).get(case.facts[key])
            if entry is not None:
                steps.extend(entry.steps)
                specialist.extend(entry.specialist)
        steps.extend(case.steps)
        specialist.extend(case.specialist)
        return Requirement(
            steps=tuple(dict.fromkeys(steps)), specialist=tuple(dict.fromkeys(specialist))
        )

    @cached_property
    def case_requirements(self) -> dict[str, tuple[Requirement, ...]]:
        """:meth:`requirement` of every case of every template, by template id and in case order:
        worked out once per bank (a new episode's ticket factory reads them)."""
        return {t.id: tuple(self.requirement(t, c) for c in t.cases) for t in self.templates}

    def templates_in(
        self, split: str, only: tuple[str, ...] | None = None
    ) -> list[tuple[Template, tuple[TextVariant, ...]]]:
        """The templates a scenario drawing from ``split`` samples, each with its usable variants;
        ``only`` keeps the templates with those ids (a scenario's ``tickets.templates``)."""
        if split not in SPLITS:
            raise ValueError(f"tickets.split must be one of {SPLITS}, got {split!r}")
        chosen = self.templates
        if only is not None:
            known = {t.id for t in self.templates}
            unknown = [name for name in only if name not in known]
            if unknown:
                raise ValueError(f"tickets.templates: unknown template id(s) {unknown} in this bank")
            chosen = tuple(t for t in self.templates if t.id in set(only))
        pairs = [(t, t.variants_in(split)) for t in chosen]
        drawn = [(t, variants) for t, variants in pairs if variants]
        if only is not None and not drawn:
            raise ValueError(f"tickets.templates: none of {list(only)} has text on the {split!r} side of the split")
        return drawn

    @cached_property
    def fact_encoding(self) -> dict[tuple[str, str], int]:
        """A fixed index for every (fact, value) pair, for observation vectors."""
        pairs = [(k, v) for k in sorted(self.fact_values) for v in self.fact_values[k]]
        return {pair: i for i, pair in enumerate(pairs)}


_DETAILS: dict[int, tuple[Template, dict[str, str]]] = {}  # id(template) -> (template, its bank's details)


def details_of(template: Template) -> dict[str, str]:
    """The ``details`` of the bank ``template`` was loaded with (empty: none, or a template built alone)."""
    entry = _DETAILS.get(id(template))
    return entry[1] if entry is not None and entry[0] is template else {}


def _check_tools(where: str, steps: tuple[str, ...], specialist: tuple[str, ...]) -> None:
    for tool in steps:
        if tool not in RESOLVER_WORK_TOOLS:
            raise ValueError(
                f"{where}.steps: {tool!r} is not a resolver tool (known: {sorted(RESOLVER_WORK_TOOLS)})"
            )
    for tool in specialist:
        if tool not in SPECIALIST_WORK_TOOLS:
            raise ValueError(
                f"{where}.specialist: {tool!r} is not a specialist tool "
                f"(known: {sorted(SPECIALIST_WORK_TOOLS)})"
            )


__all__ = [
    "CATEGORIES",
    "DETAIL_PLACEHOLDERS",
    "DIAGNOSTIC_TOOLS",
    "PRIORITIES",
    "Case",
    "PlaybookEntry",
    "PriorityRule",
    "Requirement",
    "SPLITS",
    "Template",
    "TextVariant",
    "TicketBank",
    "details_of",
]
