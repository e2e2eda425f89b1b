"""What the triage observation supports: a supervised learner with the *true* labels on it.

A logistic regression (scikit-learn) is fitted on the ticket part of the triage observation -- the hashed
text, the tier and the declared labels, exactly as the environment encodes them -- of 20,000 train-split
tickets with their true category and priority, and scored on 6,000 held-out tickets. No learner that
reads this observation is likely to triage held-out tickets much better; the tuned ``text_classifier``
reads the raw text (word and character n-grams with IDF weights, no hashing collisions).

    python benchmarks/observation_probe.py          # prints held-out accuracies per text setting and C
"""

from __future__ import annotations

import numpy as np

from csr_marl.config.domain import CATEGORIES, PRIORITIES, TIERS
from csr_marl.config.loading import load_scenario
from csr_marl.envs.text_hashing import TextHasher
from csr_marl.policies.baselines import training_tickets
from csr_marl.sim.random import RandomStreams
from csr_marl.sim.tickets import TicketFactory

SETTINGS = {"1024 features, words + character 2-5-grams": (1024, (2, 5)), "256 features, words": (256, None)}
CS = (1.0, 10.0)


def one_hot(values: tuple[str, ...], value: str) -> list[float]:
    return [1.0 if v == value else 0.0 for v in values]


def features(tickets: list, hasher: TextHasher) -> np.ndarray:
    return np.array([hasher(t.text) + one_hot(TIERS, t.tier) + one_hot(CATEGORIES, t.declared_category)
                     + one_hot(PRIORITIES, t.declared_priority) for t in tickets], dtype=np.float32)


def main() -> None:
    from sklearn.linear_model import LogisticRegression

    scenario = load_scenario("tasks/classify")
    kb, train = training_tickets(scenario, 20_000)
    test = scenario.model_copy(update={"tickets": scenario.tickets.model_copy(update={"split": "test"})})
    factory = TicketFactory(test, kb.bank, RandomStreams(7))
    held_out = [factory.new(0.0) for _ in range(6000)]
    for name, (n, chars) in SETTINGS.items():
        hasher = TextHasher(n, chars)
        x, x_out = features(train, hasher), features(held_out, hasher)
        for c in CS:
            accuracy = []
            for label in ("true_category", "true_priority"):
                model = LogisticRegression(C=c, max_iter=1000).fit(x, [getattr(t, label) for t in train])
                accuracy.append(float(np.mean(model.predict(x_out) == np.array([getattr(t, label) for t in held_out]))))
            print(f"{name}, C={c:g}: held-out category accuracy {accuracy[0]:.3f}, priority {accuracy[1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
