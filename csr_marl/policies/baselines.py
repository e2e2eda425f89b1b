"""The baselines a data scientist tries before reinforcement learning, fitted on the train split only.

- ``declared_labels``: triage copies the labels the customer chose on the web form (category and
  priority; right about three times in four on the default bank) and routes to the resolver queue;
  resolvers and the escalation desk work as the ``heuristic``. No learning at all.
- ``text_classifier``: a supervised text classifier (scikit-learn: TF-IDF over word uni- and bigrams
  and character 2-5-grams, plus the customer's tier and declared labels, then logistic regression)
  fitted on tickets drawn from the bank's *train* split, at the settings of :data:`TUNED` (training
  size, features and regularisation chosen on a validation split of *train* templates by
  ``benchmarks/tune_ladder.py``). It gives triage its category and priority, and replaces the
  heuristic's issue lookup (which known issue a ticket is), so the heuristic's workflows run on the
  classifier's reading of the text. Needs the ``baselines`` extra (``pip install 'csr_marl[baselines]'``).

Neither ever sees a held-out ticket: on ``tickets.split: test`` they read text they were not fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..config.scenario import Scenario
from ..config.tickets import Template
from ..sim.decisions import Decision, decode_triage, encode_triage
from ..sim.random import RandomStreams
from ..sim.tickets import Ticket, TicketFactory
from .base import register
from .heuristic import HeuristicPolicy, KnowledgeBase

TRAINING_SEED = 20_240_601  # the training tickets' seed (fixed: every episode and worker fits the same model)


@dataclass(frozen=True)
class ClassifierSettings:
    """How ``text_classifier`` is fitted: how many train-split tickets, which n-grams, and the inverse
    regularisation ``C`` of each logistic regression (category, priority, known issue)."""

    tickets: int = 6000
    word_ngrams: tuple[int, int] = (1, 2)
    char_ngrams: tuple[int, int] | None = None  # character n-grams within words (None: words only)
    c_category: float = 10.0
    c_priority: float = 10.0
    c_template: float = 10.0

    def label(self) -> str:
        chars = f", chars {self.char_ngrams[0]}-{self.char_ngrams[1]}" if self.char_ngrams else ""
        return (f"{self.tickets} tickets, words {self.word_ngrams[0]}-{self.word_ngrams[1]}{chars}, "
                f"C category {self.c_category:g} / priority {self.c_priority:g} / issue model {self.c_template:g}")


UNTUNED = ClassifierSettings()  # the first settings (committed before the search; kept to compare)
# Chosen by ``python benchmarks/tune_ladder.py`` on a validation split of train templates only
# (benchmarks/results/ladder_tuning.md): never on held-out tickets.
TUNED = ClassifierSettings(tickets=20_000, char_ngrams=(2, 5), c_category=30.0, c_priority=30.0, c_template=30.0)
_FITTED: dict[str, "TextClassifier"] = {}


@register("declared_labels")
class DeclaredLabelsPolicy(HeuristicPolicy):
    """Triage copies the customer's declared category and priority; the rest is the heuristic."""

    def triage(self, decision: Decision) -> int:
        ticket = decision.ticket
        assert ticket is not None
        return encode_triage(ticket.declared_category, ticket.declared_priority, "resolver")


def document(ticket: Ticket) -> str:
    """What the classifier reads: the text, then the tier and the declared labels as tokens."""
    return (
        f"{ticket.text}\n__tier_{ticket.tier} __declared_{ticket.declared_category} "
        f"__declared_{ticket.declared_priority}"
    )


def _sklearn() -> Any:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ImportError(
            "the text_classifier baseline needs scikit-learn: pip install 'csr_marl[baselines]'"
        ) from None


def vectorizer(settings: ClassifierSettings) -> Any:
    """The unfitted TF-IDF feature extractor of ``settings`` (words, and characters if asked)."""
    _sklearn()
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    words = TfidfVectorizer(ngram_range=settings.word_ngrams, min_df=2, sublinear_tf=True, token_pattern=r"[A-Za-z0-9_']+")
    if settings.char_ngrams is None:
        return words
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=settings.char_ngrams, min_df=2, sublinear_tf=True)
    return FeatureUnion([("words", words), ("chars", chars)])


def fit_label(features: Any, labels: Sequence[str], c: float) -> Any:
    """A logistic regression of ``labels`` on ``features`` (the constant where there is one class)."""
    _sklearn()
    from sklearn.linear_model import LogisticRegression

    kinds = sorted(set(labels))
    # A bank with one class (the validation banks' single issue) needs no model: the constant.
    return _Constant(kinds[0]) if len(kinds) == 1 else LogisticRegression(C=c, max_iter=2000).fit(features, labels)


def training_tickets(scenario: Scenario, n: int) -> tuple[KnowledgeBase, list[Ticket]]:
    """The train split's knowledge base and ``n`` tickets drawn from the train split (fixed seed)."""
    train = scenario.model_copy(update={"tickets": scenario.tickets.model_copy(update={"split": "train"})})
    kb = KnowledgeBase.for_bank(scenario.tickets.bank, "train")
    factory = TicketFactory(train, kb.bank, RandomStreams(TRAINING_SEED))
    return kb, [factory.new(0.0) for _ in range(n)]


class TextClassifier:
    """Three logistic regressions over one TF-IDF: category, priority and known issue (template)."""

    def __init__(self, scenario: Scenario, settings: ClassifierSettings = TUNED) -> None:
        _sklearn()
        self.settings = settings
        kb, tickets = training_tickets(scenario, settings.tickets)
        self.templates = {template.id: template for template, _ in kb.bank.templates_in("train")}
        self.vectorizer = vectorizer(settings)
        features = self.vectorizer.fit_transform([document(t) for t in tickets])
        self.models = {
            "category": fit_label(features, [t.true_category for t in tickets], settings.c_category),
            "priority": fit_label(features, [t.true_priority for t in tickets], settings.c_priority),
            "template": fit_label(features, [t.template.id for t in tickets], settings.c_template),
        }
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
        text = document(ticket)
        cached = self._cache.get(text)
        if cached is None:
            if len(self._cache) > 50_000:
                self._cache.clear()
            x = self.vectorizer.transform([text])
            cached = self._cache[text] = tuple(str(m.predict(x)[0]) for m in self.models.values())  # type: ignore[assignment]
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


@register("text_classifier_overflow")
class TextClassifierOverflowPolicy(TextClassifierPolicy):
    """``text_classifier`` with overflow routing: its triage sends a resolver-bound ticket to the escalation
    desk while more than ``queue`` tickets wait for a resolver and fewer than ``desk`` wait for the desk
    (both counts are in a triage agent's observation). The defaults were chosen on train tickets by
    ``benchmarks/overflow_routing.py``. It reads the queues of the core it is bound to: ``bind(center)``,
    which :func:`csr_marl.simulate` and the environments call for any policy that has it."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator | None = None, *, queue: int = 0,
                 desk: int = 2) -> None:
        super().__init__(scenario, rng)
        self.queue, self.desk = queue, desk
        self.queues: dict[str, Any] | None = None

    def bind(self, center: Any) -> None:
        self.queues = center.queues

    def triage(self, decision: Decision) -> int:
        action = super().triage(decision)
        category, priority, route = decode_triage(action)
        if not self.has_desk or route == "escalation":  # no desk, or routed there already
            return action
        if self.queues is None:
            raise RuntimeError("text_classifier_overflow reads the queues: bind(center) before its first decision")
        if len(self.queues["resolver"]) > self.queue and len(self.queues["escalation"]) < self.desk:
            overflow = encode_triage(category, priority, "escalation")
            if overflow in decision.legal:
                return overflow
        return action


__all__ = [
    "TUNED", "UNTUNED", "ClassifierSettings", "DeclaredLabelsPolicy", "TextClassifier", "TextClassifierOverflowPolicy",
    "TextClassifierPolicy",
    "document", "fit_label", "training_tickets", "vectorizer",
]
