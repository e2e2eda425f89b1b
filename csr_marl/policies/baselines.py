"""The baselines a data scientist tries before reinforcement learning, fitted on the train split only.

- ``declared_labels``: triage copies the labels the customer chose on the web form (category and
  priority; right about three times in four on the default bank) and routes to the resolver queue;
  resolvers and the escalation desk work as the ``heuristic``. No learning at all.
- ``text_classifier``: a supervised text classifier (scikit-learn: TF-IDF over word uni- and bigrams
  plus the customer's tier and declared labels, then logistic regression) fitted on tickets drawn
  from the bank's *train* split. It gives triage its category and priority, and replaces the
  heuristic's issue lookup (which known issue a ticket is), so the heuristic's workflows run on the
  classifier's reading of the text. Needs the ``baselines`` extra (``pip install 'csr_marl[baselines]'``).

Neither ever sees a held-out ticket: on ``tickets.split: test`` they read text they were not fitted on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.scenario import Scenario
from ..config.tickets import Template
from ..sim.decisions import Decision, encode_triage
from ..sim.random import RandomStreams
from ..sim.tickets import Ticket, TicketFactory
from .base import register
from .heuristic import HeuristicPolicy, KnowledgeBase

TRAINING_TICKETS = 6000  # tickets drawn from the train split to fit the classifier on
TRAINING_SEED = 20_240_601  # their seed (fixed: every episode and worker fits the same model)
_FITTED: dict[str, "TextClassifier"] = {}


@register("declared_labels")
class DeclaredLabelsPolicy(HeuristicPolicy):
    """Triage copies the customer's declared category and priority; the rest is the heuristic."""

    def triage(self, decision: Decision) -> int:
        ticket = decision.ticket
        assert ticket is not None
        return encode_triage(ticket.declared_category, ticket.declared_priority, "resolver")


def _document(ticket: Ticket) -> str:
    """What the classifier reads: the text, then the tier and the declared labels as tokens."""
    return (
        f"{ticket.text}\n__tier_{ticket.tier} __declared_{ticket.declared_category} "
        f"__declared_{ticket.declared_priority}"
    )


class TextClassifier:
    """Three logistic regressions over one TF-IDF: category, priority and known issue (template)."""

    def __init__(self, scenario: Scenario) -> None:
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
            from sklearn.linear_model import LogisticRegression
        except ImportError:
            raise ImportError(
                "the text_classifier baseline needs scikit-learn: pip install 'csr_marl[baselines]'"
            ) from None
        train = scenario.model_copy(update={"tickets": scenario.tickets.model_copy(update={"split": "train"})})
        kb = KnowledgeBase.for_bank(scenario.tickets.bank, "train")
        factory = TicketFactory(train, kb.bank, RandomStreams(TRAINING_SEED))
        tickets = [factory.new(0.0) for _ in range(TRAINING_TICKETS)]
        self.templates = {template.id: template for template, _ in kb.bank.templates_in("train")}
        self.vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, token_pattern=r"[A-Za-z0-9_']+")
        features = self.vectorizer.fit_transform([_document(t) for t in tickets])
        self.models = {}
        for name, labels in (
            ("category", [t.true_category for t in tickets]),
            ("priority", [t.true_priority for t in tickets]),
            ("template", [t.template.id for t in tickets]),
        ):
            kinds = sorted(set(labels))
            # A bank with one class (the validation banks' single issue) needs no model: the constant.
            self.models[name] = (
                _Constant(kinds[0]) if len(kinds) == 1 else LogisticRegression(C=10.0, max_iter=2000).fit(features, labels)
            )
        self._cache: dict[str, tuple[str, str, str]] = {}

    @classmethod
    def for_scenario(cls, scenario: Scenario) -> "TextClassifier":
        """One fitted classifier per ticket settings and customer mix, per process (fitting takes seconds)."""
        key = scenario.tickets.model_dump_json(exclude={"split"}) + scenario.customers.model_dump_json()
        fitted = _FITTED.get(key)
        if fitted is None:
            if len(_FITTED) >= 4:
                _FITTED.clear()
            fitted = _FITTED[key] = cls(scenario)
        return fitted

    def predict(self, ticket: Ticket) -> tuple[str, str, str]:
        """(category, priority, template id) for a ticket."""
        document = _document(ticket)
        cached = self._cache.get(document)
        if cached is None:
            if len(self._cache) > 50_000:
                self._cache.clear()
            x = self.vectorizer.transform([document])
            cached = self._cache[document] = tuple(str(m.predict(x)[0]) for m in self.models.values())  # type: ignore[assignment]
        return cached  # type: ignore[return-value]


class _Constant:
    """A fitted label with a single class: predicts it."""

    def __init__(self, label: str) -> None:
        self.label = label

    def predict(self, x: Any) -> list[str]:
        return [self.label] * x.shape[0]


class _ClassifiedKnowledge:
    """The heuristic's knowledge base with its text lookup replaced by the classifier's issue."""

    def __init__(self, kb: KnowledgeBase, classifier: TextClassifier) -> None:
        self._kb = kb
        self._classifier = classifier

    def match(self, ticket: Ticket) -> Template:
        return self._classifier.templates[self._classifier.predict(ticket)[2]]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kb, name)


@register("text_classifier")
class TextClassifierPolicy(HeuristicPolicy):
    """Triage and issue lookup by a TF-IDF + logistic-regression classifier fitted on the train split;
    the heuristic's queue order and workflows otherwise (module docstring)."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator | None = None) -> None:
        super().__init__(scenario, rng)
        self.classifier = TextClassifier.for_scenario(scenario)
        self.kb = _ClassifiedKnowledge(self.kb, self.classifier)  # type: ignore[assignment]

    def triage(self, decision: Decision) -> int:
        ticket = decision.ticket
        assert ticket is not None
        category, priority, template_id = self.classifier.predict(ticket)
        template = self.classifier.templates[template_id]
        route = "escalation" if self.has_desk and self.kb.evidently_escalated(template) else "resolver"
        return encode_triage(category, priority, route)


__all__ = ["DeclaredLabelsPolicy", "TextClassifier", "TextClassifierPolicy"]
