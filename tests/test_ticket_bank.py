"""The default ticket bank: coverage, solvability with each role's tools, and the loader's checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from csr_marl.config import ScenarioError, load_ticket_bank, scenarios_dir
from csr_marl.config.domain import (
    CATEGORIES,
    FACT_REVEALED_BY,
    PRIORITIES,
    RESOLVER_WORK_TOOLS,
    SPECIALIST_WORK_TOOLS,
)
from csr_marl.config.tickets import GENERATED_SLOTS, SLOT_PATTERN, TicketBank


@pytest.fixture(scope="module")
def bank() -> TicketBank:
    return load_ticket_bank(str(scenarios_dir() / "tickets" / "default.yaml"))


def _texts(template) -> list[str]:
    return [f"{v.subject}\n{v.body}".lower() for v in template.variants]


# ------------------------------------------------------------------------------------------ coverage


def test_bank_covers_every_category_and_priority(bank):
    assert len(bank.templates) >= 60
    for category in CATEGORIES:
        count = sum(t.category == category for t in bank.templates)
        assert count >= 12, f"only {count} {category} templates"
    for priority in PRIORITIES:
        count = sum(t.priority.base == priority for t in bank.templates)
        assert count >= 5, f"only {count} templates with base priority {priority}"


def test_every_template_has_several_variants(bank):
    thin = [t.id for t in bank.templates if len(t.variants) < 3]
    assert not thin, f"templates with fewer than 3 variants: {thin}"


def test_template_ids_are_unique(bank):
    ids = [t.id for t in bank.templates]
    assert len(ids) == len(set(ids))


# ----------------------------------------------------------------------------------- solvability


def test_every_case_is_solvable_with_the_roles_tools(bank):
    for template in bank.templates:
        for case in template.cases:
            need = bank.requirement(template, case)
            assert set(need.steps) <= RESOLVER_WORK_TOOLS, (template.id, need.steps)
            assert set(need.specialist) <= SPECIALIST_WORK_TOOLS, (template.id, need.specialist)


def test_every_hidden_fact_is_revealed_by_a_required_step(bank):
    for template in bank.templates:
        for case in template.cases:
            steps = bank.requirement(template, case).steps
            for key in case.facts:
                assert FACT_REVEALED_BY[key] in steps, (template.id, key, steps)


def test_revealed_facts_change_the_next_step(bank):
    """The same text can need different work: only a diagnostic tool tells which."""
    branching = [
        t.id
        for t in bank.templates
        if len({bank.requirement(t, c) for c in t.cases}) > 1
    ]
    assert branching, "no template has cases with different requirements"
    assert "billing.double_charge" in branching


def test_some_templates_need_escalation_and_most_do_not(bank):
    escalating = [
        t.id
        for t in bank.templates
        if any(bank.requirement(t, c).needs_escalation for c in t.cases)
    ]
    assert len(escalating) >= 3
    assert len(escalating) < len(bank.templates) / 2, escalating


def test_playbook_covers_every_fact_value_and_every_value_is_used(bank):
    """Each revealable value says explicitly what it calls for, and none is dead vocabulary."""
    for key, values in bank.fact_values.items():
        assert set(values) <= set(bank.playbook.get(key, {})), key
    used = {(k, v) for t in bank.templates for c in t.cases for k, v in c.facts.items()}
    assert set(bank.fact_encoding) <= used, sorted(set(bank.fact_encoding) - used)


# ------------------------------------------------------------------------------------ text quality


def test_every_slot_has_values(bank):
    for template in bank.templates:
        for slot in template.slots:
            assert slot in GENERATED_SLOTS or bank.slots.get(slot), (template.id, slot)
        for variant in template.variants:
            names = SLOT_PATTERN.findall(variant.subject) + SLOT_PATTERN.findall(variant.body)
            assert set(names) <= template.slots


def test_every_cue_appears_in_some_variant(bank):
    """A cue no variant contains can never raise the priority: it is dead."""
    for template in bank.templates:
        texts = _texts(template)
        for cue in template.priority.cues:
            assert any(cue.lower() in text for text in texts), (template.id, cue)


# ----------------------------------------------------------------------------------- loader checks


def _minimal_bank() -> dict:
    return {
        "version": 1,
        "fact_values": {"payment_status": ["settled", "duplicate_capture"]},
        "playbook": {"payment_status": {"duplicate_capture": {"steps": ["initiate_refund"]}}},
        "templates": [
            {
                "id": "billing.double_charge",
                "category": "billing",
                "priority": {"base": "medium", "cues": {"charged twice": 1}},
                "variants": [{"subject": "Charged twice", "body": "Order {order_id}, charged twice."}],
                "cases": [{"facts": {"payment_status": "duplicate_capture"}}],
            }
        ],
    }


def _write(tmp_path: Path, raw: dict) -> str:
    path = tmp_path / "bank.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return str(path)


def test_minimal_bank_loads(tmp_path):
    bank = load_ticket_bank(_write(tmp_path, _minimal_bank()))
    template = bank.templates[0]
    need = bank.requirement(template, template.cases[0])
    assert need.steps == ("check_payment", "initiate_refund")
    assert not need.needs_escalation


def test_duplicate_template_id_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["templates"].append(dict(raw["templates"][0]))
    with pytest.raises(ScenarioError, match="duplicate"):
        load_ticket_bank(_write(tmp_path, raw))


def test_unknown_tool_in_a_case_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["templates"][0]["cases"][0]["steps"] = ["issue_voucher"]
    with pytest.raises(ScenarioError, match="issue_voucher"):
        load_ticket_bank(_write(tmp_path, raw))


def test_resolver_tool_as_specialist_step_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["templates"][0]["cases"][0]["specialist"] = ["initiate_refund"]
    with pytest.raises(ScenarioError, match="initiate_refund"):
        load_ticket_bank(_write(tmp_path, raw))


def test_unknown_tool_in_the_playbook_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["playbook"]["payment_status"]["duplicate_capture"]["specialist"] = ["call_the_bank"]
    with pytest.raises(ScenarioError, match="call_the_bank"):
        load_ticket_bank(_write(tmp_path, raw))


def test_unknown_fact_value_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["templates"][0]["cases"][0]["facts"] = {"payment_status": "partially_refunded"}
    with pytest.raises(ScenarioError, match="partially_refunded"):
        load_ticket_bank(_write(tmp_path, raw))


def test_unknown_fact_key_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["fact_values"]["weather"] = ["rainy"]
    with pytest.raises(ScenarioError, match="weather"):
        load_ticket_bank(_write(tmp_path, raw))


def test_slot_without_values_is_rejected(tmp_path):
    raw = _minimal_bank()
    raw["templates"][0]["variants"][0]["body"] = "My {product} was charged twice."
    with pytest.raises(ScenarioError, match="product"):
        load_ticket_bank(_write(tmp_path, raw))


# ------------------------------------------------------------------------------------- held-out split


def test_the_default_split_is_the_documented_rule(bank):
    by_category: dict[str, list[str]] = {}
    for template in bank.templates:
        by_category.setdefault(template.category, []).append(template.id)
    held_out = {tid for ids in by_category.values() for i, tid in enumerate(sorted(ids)) if i % 5 == 4}
    assert {t.id for t in bank.templates if t.split == "test"} == held_out
    assert all(len([t for t in bank.templates if t.split == "test" and t.category == c]) >= 3 for c in CATEGORIES)
    for template in bank.templates:
        if template.split == "train":
            assert [v.split for v in template.variants] == ["train"] * (len(template.variants) - 1) + ["test"]


def _written_from(variant, ticket) -> bool:
    """Whether the ticket's text was filled in from this variant (slots match anything)."""
    pattern = "".join(
        ".+?" if i % 2 else re.escape(part) for i, part in enumerate(SLOT_PATTERN.split(f"{variant.subject}\n{variant.body}"))
    )
    return re.fullmatch(pattern, ticket.text, re.S) is not None


def test_train_and_test_draws_never_meet():
    import csr_marl
    from csr_marl.sim import ContactCenter

    seen = {}
    for split in ("train", "test"):
        scenario = csr_marl.load_scenario(  # clean text, to tell the variant (noise: test_text_noise.py)
            "standard_day", overrides={"tickets.split": split, "horizon_minutes": 480, "tickets.noise.enabled": False}
        )
        center = ContactCenter(scenario, seed=0)
        texts = set()
        for _ in range(400):
            ticket = center.factory.new(0.0)
            variant = next(v for v in ticket.template.variants if _written_from(v, ticket))
            held_out = ticket.template.split == "test" or variant.split == "test"
            assert held_out == (split == "test"), (split, ticket.template.id, ticket.subject)
            texts.add((ticket.template.id, variant.subject))
        seen[split] = texts
    assert not seen["train"] & seen["test"]
    assert len({tid for tid, _ in seen["test"]}) > 20  # held-out variants of train templates too


def test_a_split_with_no_tickets_in_the_bank_is_one_clear_error():
    import csr_marl

    with pytest.raises(ScenarioError, match=r"tickets.split 'test': the bank validation.yaml holds no test tickets"):
        csr_marl.load_scenario("validation/mmc", overrides={"tickets.split": "test"})
    with pytest.raises(ScenarioError, match="tickets.split"):
        csr_marl.load_scenario("standard_day", overrides={"tickets.split": "held_out"})


def test_a_train_template_needs_a_train_variant(tmp_path):
    raw = _minimal_bank()
    for variant in raw["templates"][0]["variants"]:
        variant["split"] = "test"
    with pytest.raises(ScenarioError, match="needs at least one train text variant"):
        load_ticket_bank(_write(tmp_path, raw))


def _triage_accuracy(policy: str, split: str, noise: bool) -> tuple[float, float]:
    """Category and priority accuracy on tasks/classify, mean over seeds 0-2."""
    import csr_marl

    runs = [
        csr_marl.simulate("tasks/classify", policy=policy, seed=s,
                          overrides={"tickets.split": split, "tickets.noise.enabled": noise})
        for s in range(3)
    ]
    return (sum(r.kpis["triage_accuracy"] for r in runs) / 3, sum(r.kpis["triage_priority_accuracy"] for r in runs) / 3)


def test_a_knowledge_base_from_the_train_split_has_never_seen_held_out_tickets() -> None:
    """On clean text the heuristic (knowledge base: train split) triages train tickets perfectly and
    errs on held-out ones like a newcomer; heuristic_full, which has seen them, does not."""
    assert _triage_accuracy("heuristic", "train", False) == (1.0, 1.0)
    assert _triage_accuracy("heuristic_full", "test", False) == (1.0, 1.0)
    category, priority = _triage_accuracy("heuristic", "test", False)
    assert category < 0.8 and priority < 0.8


def test_noisy_text_keeps_the_heuristic_clearly_below_perfect_and_held_out_below_train() -> None:
    """With the default noise (typos, misleading subjects, mixed topics, stated labels) a keyword
    lookup no longer triages even the text it knows perfectly (measured: 0.94 category, 0.96 priority)."""
    train, held_out = _triage_accuracy("heuristic", "train", True), _triage_accuracy("heuristic", "test", True)
    assert 0.85 < train[0] < 0.98 and 0.85 < train[1] < 0.99
    assert held_out[0] < train[0] - 0.2 and held_out[1] < train[1] - 0.2
    full = _triage_accuracy("heuristic_full", "test", True)
    assert full[0] > held_out[0] + 0.2  # having seen the held-out text is worth that much


def test_heuristic_train_is_the_heuristic_under_its_older_name() -> None:
    import csr_marl

    runs = [csr_marl.simulate("tasks/classify", policy=p, seed=0, overrides={"tickets.split": "test"}) for p in
            ("heuristic", "heuristic_train")]
    assert runs[0].kpis == runs[1].kpis


def test_the_knowledge_base_sums_each_known_word_of_a_text_once() -> None:
    """The lookup's template is the best column of the summed rows of the text's distinct known words
    (in row order, so the float sums never depend on the process's hash seed), on noisy train and
    held-out tickets alike."""
    import numpy as np

    import csr_marl
    from csr_marl.policies.heuristic import KnowledgeBase, tokens
    from csr_marl.sim.center import ContactCenter

    for split in ("train", "test"):
        scenario = csr_marl.load_scenario("standard_day", {"tickets.split": split})
        kb = KnowledgeBase.for_bank(scenario.tickets.bank, "train", informative_share=1.0, idf_power=1.0)
        factory = ContactCenter(scenario, seed=3).factory
        for ticket in (factory.new(0.0) for _ in range(1500)):
            rows = sorted(kb._rows[w] for w in tokens(ticket.text) if w in kb._rows)
            best = int(np.argmax(kb._weights[rows].sum(axis=0))) if rows else 0
            assert kb.match(ticket) is kb._templates[best], ticket.text


def test_every_finding_of_the_bank_has_a_record_with_a_value_to_state(bank):
    """Each fact value's detail holds a date, record number or version: what a reply must read."""
    from csr_marl.sim.fact_details import CREDITED

    values = {value for listed in bank.fact_values.values() for value in listed}
    assert set(bank.details) == values
    for value, sentence in bank.details.items():
        assert set(SLOT_PATTERN.findall(sentence)) & CREDITED, value


@pytest.mark.parametrize("details, message", [
    ({"not_a_value": "on {date}"}, "not a value of fact_values"),
    ({"delayed": "scanned at {depot}"}, "unknown placeholder"),
])
def test_a_detail_for_an_unknown_value_or_placeholder_is_refused(bank, details, message):
    data = bank.model_dump()
    data["details"] = details
    with pytest.raises(ValueError, match=message):
        TicketBank.model_validate(data)
