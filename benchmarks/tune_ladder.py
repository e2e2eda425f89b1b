"""Tune the non-RL ladder at its best honest settings: ``text_classifier`` and the heuristic's knowledge
base, chosen on a validation split of *train* templates only (never on held-out tickets).

The bank's train templates are dealt into three folds (fixed seed). For each fold, the models are fitted
on tickets of the other two folds' templates and scored on tickets of the fold's own templates, which
they never saw: the same situation as the held-out split, whose templates and wordings were never
trained on. Scores are averaged over the folds:

- category: accuracy;
- priority: the classify task's priority reward per ticket (+0.1 right, -0.05 per level of distance);
- a settings row's validation reward: 0.2 x category accuracy + the priority reward (the classify
  task's triage reward, routing aside).

Search for ``text_classifier`` (coordinate search within a budget of about 10 CPU-minutes):

1. at 20,000 training tickets: the n-gram features (word 1-2-grams; plus character 2-5-grams; plus
   character 3-6-grams) x the inverse regularisation C of each label's logistic regression;
2. at the best features and Cs: the training size (6,000, 20,000, 40,000 tickets), within a budget of
   20,000 tickets: the classifier is fitted in every process that plays it (each sweep worker, each
   test run), and a whole fit at 20,000 (the three models) takes about a minute of CPU and 1.5 GB.
   Each size's whole-fit CPU time is measured and shown; the budget is in tickets, so the choice does
   not depend on the machine's load.

The known-issue model takes the category model's C (a held-out template has no right issue to score).
For the heuristic's knowledge base: which words count (in at most 1/8, 1/4, 1/2 or all of the
variants) x the IDF weight's power (1, 2, 3).

    python benchmarks/tune_ladder.py            # print the search
    python benchmarks/tune_ladder.py --write    # and write benchmarks/results/ladder_tuning.{md,json}

The chosen settings are then written by hand into ``csr_marl.policies.baselines.TUNED`` (and the
knowledge base's defaults); the page says whether the committed settings are the chosen ones.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from csr_marl.config.domain import PRIORITIES
from csr_marl.config.loading import load_scenario
from csr_marl.policies.baselines import (
    TUNED, UNTUNED, ClassifierSettings, TextClassifier, document, fit_label, training_tickets, vectorizer,
)
from csr_marl.policies.heuristic import KnowledgeBase, labelled_priority
from csr_marl.sim.random import RandomStreams
from csr_marl.sim.tickets import TicketFactory
from csr_marl.whatif.provenance import machine, now, versions
from csr_marl.whatif.store import write_json

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIO = "standard_day"
FOLDS = 3
FOLD_SEED = 0
VALIDATION_PER_FOLD = 4000  # validation tickets scored per fold
FEATURES = {"words 1-2": None, "words 1-2 + chars 2-5": (2, 5), "words 1-2 + chars 3-6": (3, 6)}
CS = (0.3, 1.0, 3.0, 10.0, 30.0)
SIZES = (6000, 20_000, 40_000)
SEARCH_SIZE = 20_000
MAX_TRAINING_TICKETS = 20_000  # the training-size budget (module docstring)
KB_SHARES = (0.125, 0.25, 0.5, 1.0)
KB_POWERS = (1.0, 2.0, 3.0)
HELD_OUT_TICKETS = 8000
HELD_OUT_SEED = 7


def priority_reward(predicted: list[str], truth: list[str]) -> float:
    """Mean priority reward of the classify task: +0.1 right, -0.05 per level of distance."""
    distance = np.abs(np.array([PRIORITIES.index(p) for p in predicted]) - [PRIORITIES.index(t) for t in truth])
    return float(np.where(distance == 0, 0.1, -0.05 * distance).mean())


def folds(tickets: list, templates: list[str]) -> list[tuple[set[str], list]]:
    """(validation templates, their tickets) per fold."""
    order = np.random.default_rng(FOLD_SEED).permutation(templates)
    dealt = [set(order[i::FOLDS]) for i in range(FOLDS)]
    return [(held, [t for t in tickets if t.template.id in held][:VALIDATION_PER_FOLD]) for held in dealt]


def classifier_scores(tickets: list, size: int, chars: tuple[int, int] | None, cs: tuple[float, ...], splits) -> dict:
    """{(label, C): validation score averaged over folds} for one size and feature set."""
    scores: dict[tuple[str, float], list[float]] = {}
    pool = tickets[:size]
    for held, validation in splits:
        fit = [t for t in pool if t.template.id not in held]
        vec = vectorizer(ClassifierSettings(tickets=size, char_ngrams=chars))
        x_fit = vec.fit_transform([document(t) for t in fit])
        x_val = vec.transform([document(t) for t in validation])
        for c in cs:
            category = fit_label(x_fit, [t.true_category for t in fit], c).predict(x_val)
            scores.setdefault(("category", c), []).append(
                float(np.mean(category == np.array([t.true_category for t in validation]))))
            priority = fit_label(x_fit, [t.true_priority for t in fit], c).predict(x_val)
            scores.setdefault(("priority", c), []).append(
                priority_reward(list(priority), [t.true_priority for t in validation]))
    return {key: float(np.mean(values)) for key, values in scores.items()}


def knowledge_scores(scenario, splits, templates: list[str]) -> list[dict]:
    rows = []
    for share, power in itertools.product(KB_SHARES, KB_POWERS):
        category, priority = [], []
        for held, validation in splits:
            kb = KnowledgeBase(scenario.tickets.bank, "train", templates=tuple(t for t in templates if t not in held),
                               informative_share=share, idf_power=power)
            matched = [kb.match(t) for t in validation]
            category.append(float(np.mean([m.category == t.true_category for m, t in zip(matched, validation)])))
            priority.append(priority_reward([labelled_priority(m, t) for m, t in zip(matched, validation)],
                                            [t.true_priority for t in validation]))
        rows.append({"informative_share": share, "idf_power": power, "category_accuracy": float(np.mean(category)),
                     "priority_reward": float(np.mean(priority)),
                     "reward": 0.2 * float(np.mean(category)) + float(np.mean(priority))})
    return rows


def held_out_scores(settings: ClassifierSettings, train: list, held_out: list) -> dict:
    """Held-out accuracy of a fitted setting: reported beside the choice, never used to make it."""
    pool = train[:settings.tickets]
    vec = vectorizer(settings)
    x = vec.fit_transform([document(t) for t in pool])
    x_out = vec.transform([document(t) for t in held_out])
    category = fit_label(x, [t.true_category for t in pool], settings.c_category).predict(x_out)
    priority = fit_label(x, [t.true_priority for t in pool], settings.c_priority).predict(x_out)
    accuracy = float(np.mean(category == np.array([t.true_category for t in held_out])))
    reward = priority_reward(list(priority), [t.true_priority for t in held_out])
    return {"category_accuracy": accuracy, "priority_reward": reward, "reward": 0.2 * accuracy + reward,
            "settings": asdict(settings)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/ladder_tuning.{md,json}")
    parser.add_argument("--report-only", action="store_true",
                        help="re-apply the selection rules to the recorded search (ladder_tuning.json) and rewrite the page")
    args = parser.parse_args()
    if args.report_only:
        report_only()
        return
    started, cpu = time.time(), time.process_time()
    scenario = load_scenario(SCENARIO)
    kb, tickets = training_tickets(scenario, max(SIZES))
    templates = sorted(t.id for t, _ in kb.bank.templates_in("train"))
    splits = folds(tickets, templates)
    print(f"{len(templates)} train templates in {FOLDS} folds; {len(tickets)} train tickets drawn")

    grid = []
    for name, chars in FEATURES.items():
        scores = classifier_scores(tickets, SEARCH_SIZE, chars, CS, splits)
        for c in CS:
            grid.append({"size": SEARCH_SIZE, "features": name, "C": c,
                         "category_accuracy": scores[("category", c)], "priority_reward": scores[("priority", c)]})
            print(f"  {SEARCH_SIZE} {name:24s} C={c:<5g} category {scores[('category', c)]:.4f} "
                  f"priority {scores[('priority', c)]:.4f}")

    def best_of(name: str) -> tuple[float, float, float]:
        rows = [r for r in grid if r["features"] == name and r["size"] == SEARCH_SIZE]
        cat = max(rows, key=lambda r: r["category_accuracy"])
        pri = max(rows, key=lambda r: r["priority_reward"])
        return cat["C"], pri["C"], 0.2 * cat["category_accuracy"] + pri["priority_reward"]

    features = max(FEATURES, key=lambda name: best_of(name)[2])
    c_category, c_priority, _ = best_of(features)
    sizes = []
    for size in SIZES:
        scores = classifier_scores(tickets, size, FEATURES[features], tuple(sorted({c_category, c_priority})), splits)
        reward = 0.2 * scores[("category", c_category)] + scores[("priority", c_priority)]
        fit_started = time.process_time()
        TextClassifier(scenario, ClassifierSettings(tickets=size, char_ngrams=FEATURES[features], c_category=c_category,
                                                    c_priority=c_priority, c_template=c_category))
        fit_cpu = time.process_time() - fit_started
        sizes.append({"size": size, "category_accuracy": scores[("category", c_category)],
                      "priority_reward": scores[("priority", c_priority)], "reward": reward,
                      "fit_cpu_seconds": fit_cpu, "within_budget": size <= MAX_TRAINING_TICKETS})
        print(f"  size {size:6d}: category {scores[('category', c_category)]:.4f} "
              f"priority {scores[('priority', c_priority)]:.4f} reward {reward:.4f} fit {fit_cpu:.0f} CPU-s")
    size = max((r for r in sizes if r["within_budget"]), key=lambda r: r["reward"])["size"]
    chosen = ClassifierSettings(tickets=size, char_ngrams=FEATURES[features], c_category=c_category,
                                c_priority=c_priority, c_template=c_category)
    print("chosen:", chosen.label())

    knowledge = knowledge_scores(scenario, splits, templates)
    best_kb = max(knowledge, key=lambda r: r["reward"])
    default_kb = next(r for r in knowledge if r["informative_share"] == 0.25 and r["idf_power"] == 2.0)
    for row in knowledge:
        print(f"  knowledge base share {row['informative_share']:<5g} power {row['idf_power']:g}: "
              f"category {row['category_accuracy']:.4f} priority {row['priority_reward']:.4f}")

    test = scenario.model_copy(update={"tickets": scenario.tickets.model_copy(update={"split": "test"})})
    factory = TicketFactory(test, kb.bank, RandomStreams(HELD_OUT_SEED))
    held_out = [factory.new(0.0) for _ in range(HELD_OUT_TICKETS)]
    reported = {"untuned": held_out_scores(UNTUNED, tickets, held_out),
                "chosen": held_out_scores(chosen, tickets, held_out)}
    for name, row in reported.items():
        print(f"  held-out ({name}): category {row['category_accuracy']:.4f} priority {row['priority_reward']:.4f}")
    record = {
        "generated": now(), "machine": machine(), "versions": versions(),
        "wall_minutes": (time.time() - started) / 60, "cpu_minutes": (time.process_time() - cpu) / 60,
        "templates": len(templates), "folds": FOLDS, "validation_per_fold": VALIDATION_PER_FOLD, "grid": grid, "sizes": sizes,
        "chosen": asdict(chosen), "committed": asdict(TUNED), "committed_is_chosen": chosen == TUNED,
        "untuned": asdict(UNTUNED), "knowledge_base": knowledge, "knowledge_base_chosen": best_kb,
        "knowledge_base_default": default_kb, "held_out": reported,
    }
    print(f"CPU minutes: {record['cpu_minutes']:.1f}; committed TUNED is the chosen setting: {chosen == TUNED}")
    if args.write:
        write_json(RESULTS / "ladder_tuning.json", record)
        (RESULTS / "ladder_tuning.md").write_text(page(record, chosen))
        print("wrote", RESULTS / "ladder_tuning.md")


def report_only() -> None:
    """Rebuild the page from the recorded search, choosing the size by the budget in tickets."""
    import json

    record = json.loads((RESULTS / "ladder_tuning.json").read_text())
    for row in record["sizes"]:
        row["within_budget"] = row["size"] <= MAX_TRAINING_TICKETS
    size = max((r for r in record["sizes"] if r["within_budget"]), key=lambda r: r["reward"])["size"]
    chosen = ClassifierSettings(**{**record["chosen"], "tickets": size, "word_ngrams": tuple(record["chosen"]["word_ngrams"]),
                                   "char_ngrams": tuple(record["chosen"]["char_ngrams"]) if record["chosen"]["char_ngrams"] else None})
    record.update(chosen=asdict(chosen), committed_is_chosen=chosen == TUNED, rebuilt=now())
    if record["held_out"]["chosen"].get("settings") != asdict(chosen):  # scored for another choice: score this one
        scenario = load_scenario(SCENARIO)
        kb, tickets = training_tickets(scenario, chosen.tickets)
        test = scenario.model_copy(update={"tickets": scenario.tickets.model_copy(update={"split": "test"})})
        factory = TicketFactory(test, kb.bank, RandomStreams(HELD_OUT_SEED))
        held_out = [factory.new(0.0) for _ in range(HELD_OUT_TICKETS)]
        record["held_out"]["chosen"] = held_out_scores(chosen, tickets, held_out)
    write_json(RESULTS / "ladder_tuning.json", record)
    (RESULTS / "ladder_tuning.md").write_text(page(record, chosen))
    print("chosen:", chosen.label(), "; committed TUNED is the chosen setting:", chosen == TUNED)


def page(r: dict, chosen: ClassifierSettings) -> str:
    lines = [
        "# Tuning the non-RL ladder on train templates",
        "",
        f"Generated {r['generated']} by `python benchmarks/tune_ladder.py --write` on {r['machine']['platform']}, "
        f"{r['machine']['cpu_count']} CPUs; " + ", ".join(f"{k} {v}" for k, v in r["versions"].items())
        + f". CPU minutes: {r['cpu_minutes']:.1f}" + (
            f"; the choice re-applied to the recorded search by `--report-only` at {r['rebuilt']}" if "rebuilt" in r else "")
        + ".",
        "",
        f"Validation: the bank's {r['templates']} train templates dealt into {r['folds']} folds (seed {FOLD_SEED}); each "
        f"fold's models are fitted on the other folds' templates and scored on up to {r['validation_per_fold']} "
        "tickets of its own, unseen templates; scores are averaged over folds. Category: accuracy; priority: the "
        "classify task's priority reward per ticket (+0.1 right, -0.05 per level off); reward = 0.2 x category "
        "accuracy + priority reward. No held-out ticket is used to choose anything.",
        "",
        f"## text_classifier: features x C at {SEARCH_SIZE} training tickets",
        "",
        "| features | C | category accuracy | priority reward |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {g['features']} | {g['C']:g} | {g['category_accuracy']:.4f} | {g['priority_reward']:.4f} |" for g in r["grid"]]
    lines += ["", "## Training size at the best features and Cs", "",
              f"Budget: at most {MAX_TRAINING_TICKETS} training tickets (module docstring); the whole fit's CPU time "
              "(three models on every training ticket, measured on a shared machine) is shown for scale.", "",
              "| training tickets | category accuracy | priority reward | reward | whole fit, CPU-s | within budget |",
              "|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {s['size']} | {s['category_accuracy']:.4f} | {s['priority_reward']:.4f} | {s['reward']:.4f} | "
              f"{s['fit_cpu_seconds']:.0f} | {'yes' if s['within_budget'] else 'no'} |" for s in r["sizes"]]
    held = r["held_out"]
    lines += [
        "", f"**Chosen:** {chosen.label()}.",
        f"The committed `csr_marl.policies.baselines.TUNED` is {'this setting' if r['committed_is_chosen'] else 'NOT this setting'}.",
        "",
        "Reported after the choice, never used for it -- held-out tickets (the held-out split, "
        f"{HELD_OUT_TICKETS} tickets): untuned ({ClassifierSettings().label()}) category accuracy "
        f"{held['untuned']['category_accuracy']:.4f}, priority reward {held['untuned']['priority_reward']:.4f}; "
        f"chosen: {held['chosen']['category_accuracy']:.4f}, {held['chosen']['priority_reward']:.4f}.",
        "", "## The heuristic's knowledge base", "",
        "| informative words (share of variants) | IDF power | category accuracy | priority reward | reward |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {k['informative_share']:g} | {k['idf_power']:g} | {k['category_accuracy']:.4f} | "
              f"{k['priority_reward']:.4f} | {k['reward']:.4f} |" for k in r["knowledge_base"]]
    best, default = r["knowledge_base_chosen"], r["knowledge_base_default"]
    lines += ["", f"Best: share {best['informative_share']:g}, power {best['idf_power']:g} (reward {best['reward']:.4f}); "
              f"the knowledge base's defaults (share 0.25, power 2): reward {default['reward']:.4f}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
