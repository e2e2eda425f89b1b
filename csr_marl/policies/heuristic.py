"""The heuristic baseline: a careful human team working from the company's knowledge base.

It reads only what staff can see (the ticket text, tier, revealed facts and steps done) and looks the
text up in a knowledge base of known tickets: the most similar one gives the category, the priority
rule and whether a specialist is evidently needed. Then it picks the highest-priority, oldest ticket
first, runs the diagnostics the matching issue calls for, follows the playbook for what they reveal,
and responds (or escalates) once nothing else is required. When what the diagnostics reveal fits no
known case of the matched issue (the text led it to the wrong one), it follows the playbook for the
revealed values alone. It never reads hidden facts, so it errs where the text is ambiguous or noisy
(``tickets.noise``) or a fact is never checked.

Three names, two knowledge bases:

- ``heuristic`` (the default of the RL baselines; ``heuristic_train`` is the same policy under its older name):
  the knowledge base holds the bank's *train* split only, so on held-out tickets
  (``tickets.split: test``) it triages text it has never seen, as a fair baseline must;
- ``expert`` (also ``heuristic_full``): the knowledge base is the whole bank, held-out tickets
  included. It has seen the test set, so it is a reference point, never a baseline to beat; it is the
  team a staffing study models (staff who know every issue), the default of the analyst's commands.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import numpy as np

from ..config.domain import FACT_REVEALED_BY, raise_priority
from ..config.loading import load_ticket_bank
from ..config.scenario import Scenario
from ..config.tickets import SLOT_PATTERN, Case, Requirement, Template
from ..sim.decisions import Decision, Phase, encode_triage
from ..sim.tickets import Ticket
from .base import register

_WORD = re.compile(r"[a-z0-9']+")


def tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


class KnowledgeBase:
    """Finds the template a ticket most likely came from: TF-IDF cosine with every text variant.

    Only informative words count (those in at most ``informative_share`` of the variants); a word's
    weight is ``(log(n / df) + 1) ** idf_power``; each has a row of precomputed weights over the
    variants, so a lookup is one sum of a few dozen rows. The defaults were checked against other
    settings on a validation split of train templates (``benchmarks/tune_ladder.py``).
    ``templates``: build from these template ids only (that validation's fitting side).
    """

    def __init__(
        self, bank_path: str, split: str = "all", *, templates: tuple[str, ...] | None = None,
        informative_share: float = 0.25, idf_power: float = 2.0,
    ) -> None:
        self.bank = load_ticket_bank(bank_path)
        variants: list[tuple[frozenset[str], Template]] = []
        for template, known in self.bank.templates_in(split, templates):  # "train": held-out tickets unseen
            for variant in known:
                text = SLOT_PATTERN.sub(" ", f"{variant.subject}\n{variant.body}")
                variants.append((tokens(text), template))
        if not variants:
            raise ValueError(f"the ticket bank {bank_path} has no {split} tickets to build a knowledge base from")
        self._templates = [template for _, template in variants]
        n = len(variants)
        document_frequency: dict[str, int] = {}
        for words, _ in variants:
            for word in words:
                document_frequency[word] = document_frequency.get(word, 0) + 1
        informative = sorted(w for w, df in document_frequency.items() if n < 8 or df <= n * informative_share)
        self._rows = {word: r for r, word in enumerate(informative)}
        weights = np.zeros((len(informative), n))
        for i, (words, _) in enumerate(variants):
            for word in words.intersection(self._rows):
                weights[self._rows[word], i] = (math.log(n / document_frequency[word]) + 1.0) ** idf_power
        norms = np.sqrt(weights.sum(axis=0))
        self._weights = weights / np.where(norms > 0, norms, 1.0)
        self._cache: dict[str, Template] = {}
        requirements = self.bank.case_requirements
        self._requirements = {
            id(case): requirement
            for template in self.bank.templates
            for case, requirement in zip(template.cases, requirements[template.id])
        }
        self._fact_keys = {
            template.id: sorted({k for case in template.cases for k in case.facts})
            for template in self.bank.templates
        }
        self._evident = {
            template.id: all(self._requirements[id(c)].needs_escalation for c in template.cases)
            for template in self.bank.templates
        }
        self._by_findings: dict[tuple[tuple[str, str], ...], Requirement] = {}

    @classmethod
    @lru_cache(maxsize=8)
    def for_bank(
        cls, bank_path: str, split: str = "all", *, informative_share: float = 0.25, idf_power: float = 2.0
    ) -> "KnowledgeBase":
        """One shared knowledge base per ticket bank, split, settings and process (building it takes
        milliseconds)."""
        return cls(bank_path, split, informative_share=informative_share, idf_power=idf_power)

    def match(self, ticket: Ticket) -> Template:
        key = ticket.text
        template = self._cache.get(key)
        if template is None:
            if len(self._cache) > 50_000:
                self._cache.clear()
            # Each known word has a row of its own, so the text's rows are the rows of its distinct
            # words, found without first collecting the words themselves.
            get = self._rows.get
            found = {row for word in _WORD.findall(key.lower()) if (row := get(word)) is not None}
            # Summed in one order: a set's order follows the process's string hash seed.
            best = int(self._weights[sorted(found)].sum(axis=0).argmax()) if found else 0
            template = self._cache[key] = self._templates[best]
        return template

    def likely_case(self, template: Template, ticket: Ticket) -> Case | None:
        """The most frequent case consistent with the facts revealed so far."""
        if len(template.cases) == 1:
            return template.cases[0]
        revealed = ticket.revealed
        consistent = [
            case for case in template.cases
            if all(revealed.get(k, v) == v for k, v in case.facts.items())
        ]
        return max(consistent, key=lambda c: c.weight) if consistent else None

    def unchecked_diagnostics(self, template: Template, ticket: Ticket) -> list[str]:
        return [
            FACT_REVEALED_BY[k] for k in self._fact_keys[template.id]
            if k not in ticket.revealed and FACT_REVEALED_BY[k] not in ticket.done
        ]

    def evidently_escalated(self, template: Template) -> bool:
        """Every case of this issue needs a specialist, so the text alone says: escalate."""
        return self._evident[template.id]

    def requirement(self, template: Template, case: Case) -> Requirement:
        return self._requirements[id(case)]

    def playbook_requirement(self, template: Template, revealed: dict[str, str]) -> Requirement:
        """What the playbook calls for on the revealed facts alone (no known case fits them)."""
        key = tuple(sorted(revealed.items()))
        requirement = self._by_findings.get(key)
        if requirement is None:
            requirement = self._by_findings[key] = self.bank.requirement(template, Case(facts=dict(key)))
        return requirement


def labelled_priority(template: Template, ticket: Ticket) -> str:
    """The priority the playbook of issue ``template`` gives ``ticket``: its base, raised for the tier
    and for the strongest urgency cue in the text."""
    rule = template.priority
    text = ticket.text.lower()
    cue = max((lv for c, lv in rule.cues.items() if c.lower() in text), default=0)
    return raise_priority(rule.base, rule.tier_raise.get(ticket.tier, 0) + cue)


@register("heuristic")
class HeuristicPolicy:
    """Knowledge-base triage, highest priority then oldest first, playbook-driven workflows.

    The knowledge base holds the bank's train split only (module docstring)."""

    knowledge = "train"  # the part of the bank the knowledge base is built from
    # How it weighs words: chosen on a validation split of train templates (benchmarks/tune_ladder.py),
    # for wordings it never saw. Every word counts, with its plain IDF weight.
    informative_share = 1.0
    idf_power = 1.0

    def __init__(self, scenario: Scenario, rng: np.random.Generator | None = None) -> None:
        self.kb = KnowledgeBase.for_bank(
            scenario.tickets.bank, self.knowledge, informative_share=self.informative_share, idf_power=self.idf_power
        )
        self.has_desk = scenario.staffing.peak("escalation") > 0
        self._plans: dict[tuple, tuple[Template, str]] = {}  # next_tool's answers by state

    def __call__(self, decision: Decision) -> int:
        phase = decision.phase
        if phase is Phase.TRIAGE:
            return self.triage(decision)
        if phase is Phase.PICK:
            return self.pick(decision)
        tool = self.next_tool(decision)
        action = decision.tool_action(tool)
        if action in decision.legal:
            return action
        return decision.tool_action("respond_user")

    def triage(self, decision: Decision) -> int:
        ticket = decision.ticket
        assert ticket is not None
        template = self.kb.match(ticket)
        route = "escalation" if self.has_desk and self.kb.evidently_escalated(template) else "resolver"
        return encode_triage(template.category, labelled_priority(template, ticket), route)

    def pick(self, decision: Decision) -> int:
        return 0  # the queue shows the highest priority, oldest ticket first

    def next_tool(self, decision: Decision) -> str:
        ticket = decision.ticket
        assert ticket is not None
        template = self.kb.match(ticket)  # this policy's own reading (a subclass may read otherwise)
        at_desk = decision.staff.role == "escalation"
        # The playbook's answer depends on the issue, the desk, the steps done and the facts revealed
        # only: worked out once per such state (tickets of one issue follow the same few paths).
        key = (id(template), at_desk, tuple(ticket.done), tuple(ticket.revealed.items()))
        plan = self._plans.get(key)
        if plan is None or plan[0] is not template:
            if len(self._plans) >= 16384:
                self._plans.clear()
            plan = self._plans[key] = (template, self._playbook(template, ticket, at_desk))
        return plan[1]

    def _playbook(self, template: Template, ticket: Ticket, at_desk: bool) -> str:
        """The next step for ``ticket`` of issue ``template``, at the desk or not."""
        if not at_desk:
            unchecked = self.kb.unchecked_diagnostics(template, ticket)
            if unchecked:
                return unchecked[0]
        case = self.kb.likely_case(template, ticket)
        if case is None:  # the findings fit no known case of this issue: the playbook says what they need
            requirement = self.kb.playbook_requirement(template, ticket.revealed)
        else:
            requirement = self.kb.requirement(template, case)
        if at_desk:
            if not requirement.needs_escalation:
                missing = [s for s in requirement.steps if s not in ticket.done]
                return "return_to_resolver" if missing else "respond_user"
            missing = [s for s in requirement.specialist if s not in ticket.done]
            return missing[0] if missing else "respond_user"
        missing = [s for s in requirement.steps if s not in ticket.done]
        if missing:
            return missing[0]
        if requirement.needs_escalation and self.has_desk:
            return "escalate_issue"
        return "respond_user"


@register("fifo")
class FifoPolicy(HeuristicPolicy):
    """The heuristic, except that staff take the longest-waiting visible ticket, ignoring priority."""

    def pick(self, decision: Decision) -> int:
        arrivals = [ticket.arrival for ticket in decision.slots]
        return arrivals.index(min(arrivals))  # the first of the longest-waiting


@register("escalate_all")
class EscalateAllPolicy(HeuristicPolicy):
    """Triage and resolvers send everything to the escalation desk, which works as the heuristic."""

    def triage(self, decision: Decision) -> int:
        action = super().triage(decision)
        return action | 1 if self.has_desk else action  # route bit: 1 = escalation

    def next_tool(self, decision: Decision) -> str:
        if decision.role == "resolver" and self.has_desk:
            return "escalate_issue"
        return super().next_tool(decision)


# The older name of the fair heuristic, kept so that saved commands and results still run.
register("heuristic_train")(HeuristicPolicy)


@register("expert")
@register("heuristic_full")
class FullKnowledgeHeuristic(HeuristicPolicy):
    """The heuristic with a knowledge base built from the whole bank, held-out tickets included.

    It has seen the test set: a reference for how much the held-out text costs the fair ``heuristic``,
    not a baseline. Registered as ``expert`` too: the trained staff who know every issue, the team a
    staffing study models (the default of simulate, sweep, staff and schedule)."""

    knowledge = "all"
    # Its knowledge base holds every wording it meets, so it keeps the settings that match known text
    # (the analyst's studies and their pinned results were made with them).
    informative_share = 0.25
    idf_power = 2.0


__all__ = [
    "EscalateAllPolicy", "FifoPolicy", "FullKnowledgeHeuristic", "HeuristicPolicy", "KnowledgeBase", "labelled_priority",
]
