"""Text noise (tickets.noise): each kind at its rate, the truth untouched, the split kept, off = clean."""

from __future__ import annotations

import hashlib
import re

import pytest

import csr_marl
from csr_marl.config import ScenarioError
from csr_marl.config.tickets import SLOT_PATTERN
from csr_marl.policies import make_policy
from csr_marl.sim import ContactCenter, Decision, Phase
from csr_marl.sim.text_noise import MIXED_LEADS, STATED_CATEGORY, STATED_PRIORITY, second_topic

N = 4000
OFF = {"typo_rate": 0.0, "misleading_subject": 0.0, "mixed_topic": 0.0, "stated_labels": 0.0}


def _tickets(noise: dict | bool, *, split: str = "all", seed: int = 0, n: int = N, scenario: str = "standard_day"):
    value = {"enabled": noise} if isinstance(noise, bool) else {**OFF, **noise}
    scn = csr_marl.load_scenario(scenario, overrides={"tickets.split": split, "tickets.noise": value})
    factory = ContactCenter(scn, seed=seed).factory
    return [factory.new(0.0) for _ in range(n)]


def _pairs(noise: dict, **kwargs):
    """The same customers written clean and with ``noise`` (the noise has its own random stream)."""
    return list(zip(_tickets(False, **kwargs), _tickets(noise, **kwargs)))


def _within(count: int, n: int, rate: float, sds: float = 4.0) -> bool:
    return abs(count / n - rate) <= sds * (rate * (1 - rate) / n) ** 0.5


def _pattern(text: str) -> re.Pattern[str]:
    """``text`` with every slot matching any value."""
    parts = SLOT_PATTERN.split(text)
    return re.compile("".join(".+?" if i % 2 else re.escape(p) for i, p in enumerate(parts)), re.S | re.I)


# --------------------------------------------------------------------------------------------- rates


def test_misleading_subjects_appear_at_their_rate_and_name_another_category():
    pairs = _pairs({"misleading_subject": 0.10})
    changed = [(clean, noisy) for clean, noisy in pairs if noisy.subject != clean.subject]
    assert _within(len(changed), N, 0.10)
    bank = ContactCenter(csr_marl.load_scenario("standard_day"), seed=0).factory.bank
    subjects = [(t.category, _pattern(v.subject)) for t in bank.templates for v in t.variants]
    for clean, noisy in changed:
        assert noisy.body == clean.body
        assert any(c != clean.true_category and p.fullmatch(noisy.subject) for c, p in subjects), noisy.subject


def test_mixed_topics_appear_at_their_rate_after_the_customers_own_text():
    pairs = _pairs({"mixed_topic": 0.15})
    mixed = [(clean, noisy) for clean, noisy in pairs if noisy.body != clean.body]
    assert _within(len(mixed), N, 0.15)
    leads = tuple(lead for lead, _ in MIXED_LEADS)
    for clean, noisy in mixed:
        assert noisy.subject == clean.subject
        assert noisy.body.startswith(clean.body + "\n\n")
        assert noisy.body[len(clean.body) + 2:].startswith(leads)


def test_typos_hit_words_at_their_rate_and_never_ids_amounts_or_names():
    every = _pairs({"typo_rate": 1.0}, n=1500)
    some = _tickets({"typo_rate": 0.03}, n=1500)
    eligible = hit = 0
    for (clean, all_hit), noisy in zip(every, some):
        before, after, sometimes = clean.text.split(), all_hit.text.split(), noisy.text.split()
        assert len(before) == len(after) == len(sometimes)  # a typo never adds or joins words
        eligible += sum(a != b for a, b in zip(before, after))
        hit += sum(a != b for a, b in zip(before, sometimes))
        for slot, value in clean.slot_values.items():  # ids, amounts, the customer's name: intact
            whole = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
            assert len(whole.findall(all_hit.text)) == len(whole.findall(clean.text)), (slot, value, all_hit.text)
        assert all_hit.true_priority == clean.true_priority
    assert eligible > 15_000
    assert _within(hit, eligible, 0.03)


def test_a_word_in_capitals_or_shorter_than_four_letters_keeps_its_spelling():
    for clean, noisy in _pairs({"typo_rate": 1.0}, n=500):
        for before, after in zip(clean.text.split(), noisy.text.split()):
            letters = re.sub(r"[^A-Za-z]", "", before)
            if len(letters) < 4 or letters.isupper():
                assert before == after


def test_wrong_web_form_labels_are_stated_in_words_at_their_rate():
    pairs = _pairs({"stated_labels": 0.5})
    said_category = said_priority = wrong_category = wrong_priority = 0
    for clean, noisy in pairs:
        said = noisy.body[: len(noisy.body) - len(clean.body)]
        category = any(p in said for p in STATED_CATEGORY[noisy.declared_category])
        priority = any(p in said for p in STATED_PRIORITY[noisy.declared_priority])
        if noisy.declared_category == noisy.true_category:
            assert not category
        else:
            wrong_category += 1
            said_category += category
        if noisy.declared_priority == noisy.true_priority:
            assert not priority
        else:
            wrong_priority += 1
            said_priority += priority
        assert said == "" or noisy.body.endswith("\n\n" + clean.body)
    assert wrong_category > 500 and wrong_priority > 1000
    assert _within(said_category, wrong_category, 0.5) and _within(said_priority, wrong_priority, 0.5)


def test_every_stated_phrase_list_has_several_wordings():
    for phrases in (*STATED_CATEGORY.values(), *STATED_PRIORITY.values()):
        assert len(set(phrases)) >= 3
        assert all(p.isascii() for p in phrases)  # inside the text env's character set


# ------------------------------------------------------------------------------------------ truth


def test_noise_changes_the_text_only_never_the_truth_or_any_other_draw():
    """The true priority is read from the clean text: a typo in a cue ("charged twice") leaves it."""
    for clean, noisy in _pairs({"typo_rate": 0.03, "misleading_subject": 0.1, "mixed_topic": 0.15, "stated_labels": 0.5}):
        assert (clean.template, clean.case, clean.tier, clean.customer, clean.slot_values) == (
            noisy.template, noisy.case, noisy.tier, noisy.customer, noisy.slot_values)
        assert (clean.true_category, clean.true_priority, clean.declared_category, clean.declared_priority) == (
            noisy.true_category, noisy.true_priority, noisy.declared_category, noisy.declared_priority)
        assert clean.patience_left == noisy.patience_left


def test_the_default_noise_reaches_most_tickets():
    pairs = _pairs({"typo_rate": 0.03, "misleading_subject": 0.1, "mixed_topic": 0.15, "stated_labels": 0.5})
    assert sum(clean.text != noisy.text for clean, noisy in pairs) > 0.6 * N


def test_same_seed_same_text_another_seed_other_text():
    first = [t.text for t in _tickets(True, n=500)]
    assert first == [t.text for t in _tickets(True, n=500)]
    assert first != [t.text for t in _tickets(True, n=500, seed=1)]


def test_a_returning_customer_keeps_the_text_they_wrote():
    scn = csr_marl.load_scenario("standard_day")
    center = ContactCenter(scn, seed=3)
    for _ in range(50):
        ticket = center.factory.new(0.0)
        again = center.factory.returning(ticket, 30.0)
        assert (again.subject, again.body, again.text) == (ticket.subject, ticket.body, ticket.text)


# --------------------------------------------------------------------------------------------- split


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_scenario_borrows_subjects_and_topics_from_its_own_split_only(split):
    bank = ContactCenter(csr_marl.load_scenario("standard_day"), seed=0).factory.bank
    own, other = [], []
    for template, variants in bank.templates_in(split):
        own += list(variants)
    mine = {id(v) for v in own}
    other = [v for t in bank.templates for v in t.variants if id(v) not in mine]
    own_subjects, other_subjects = [_pattern(v.subject) for v in own], [_pattern(v.subject) for v in other]
    own_topics = [_pattern(second_topic(v.body)) for v in own]
    other_topics = [_pattern(second_topic(v.body)) for v in other]
    leads = sorted((lead for lead, _ in MIXED_LEADS), key=len, reverse=True)
    pairs = _pairs({"misleading_subject": 1.0, "mixed_topic": 1.0}, split=split, n=1500)
    borrowed_from_other_side = 0
    for clean, noisy in pairs:
        assert any(p.fullmatch(noisy.subject) for p in own_subjects), noisy.subject
        added = noisy.body[len(clean.body) + 2:]
        topic = added[len(next(lead for lead in leads if added.startswith(lead))):]
        assert any(p.fullmatch(topic) for p in own_topics), topic
        # text only the other side has never appears
        borrowed_from_other_side += not any(p.fullmatch(noisy.subject) for p in own_subjects) and any(
            p.fullmatch(noisy.subject) for p in other_subjects)
        borrowed_from_other_side += not any(p.fullmatch(topic) for p in own_topics) and any(
            p.fullmatch(topic) for p in other_topics)
    assert borrowed_from_other_side == 0


# ------------------------------------------------------------------------------------------- off


def test_noise_off_writes_exactly_the_text_of_before():
    """The clean text, bit for bit, as before text noise existed (digest of the earlier code's tickets)."""
    digest = hashlib.sha256()
    for name in ("standard_day", "tasks/classify"):
        for split in ("all", "train", "test"):
            for t in _tickets(False, split=split, seed=7, n=300, scenario=name):
                digest.update(f"{t.text}|{t.true_priority}|{t.declared_category}|{t.declared_priority}|{t.customer}\x00".encode())
    assert digest.hexdigest() == "e86c84b5881098228842769645501efec52d6bc50f55eb0880a73cd5ada55010"


def test_all_rates_zero_is_off_and_the_validation_presets_turn_it_off():
    assert [t.text for t in _tickets({}, n=300)] == [t.text for t in _tickets(False, n=300)]
    for name in ("validation/mmc", "validation/mmc_priority", "validation/two_tier"):
        assert not csr_marl.load_scenario(name).tickets.noise.active
    assert csr_marl.load_scenario("standard_day").tickets.noise.active


@pytest.mark.parametrize("key,value", [("typo_rate", 1.5), ("mixed_topic", -0.1), ("stated_labels", "often")])
def test_a_rate_outside_0_1_is_one_clear_error(key, value):
    with pytest.raises(ScenarioError, match=rf"tickets.noise.{key}") as caught:
        csr_marl.load_scenario("standard_day", overrides={f"tickets.noise.{key}": value})
    assert len(str(caught.value).strip().splitlines()) == 1


# ------------------------------------------------------------------------------- the heuristic's part


def test_when_no_known_case_fits_the_findings_the_heuristic_follows_the_playbook():
    """A billing.double_charge text whose payment check shows over_refund_limit (none of its cases):
    the playbook calls for initiate_refund, then the desk's approve_refund, not a reply at once."""
    scn = csr_marl.load_scenario("standard_day", overrides={"tickets.noise.enabled": False})
    center = ContactCenter(scn, seed=0)
    ticket = next(t for t in iter(lambda: center.factory.new(0.0), None) if t.template.id == "billing.double_charge")
    policy = make_policy("heuristic", scn, None)
    assert "over_refund_limit" not in {c.facts.get("payment_status") for c in ticket.template.cases}
    ticket.revealed, ticket.done = {"payment_status": "over_refund_limit"}, ("check_payment",)
    resolver, desk = (  # a decision as the core asks it (the compiled core checks it is one)
        Decision(center.staff_by_role[role][0], Phase.WORK, 0.0, [], ticket) for role in ("resolver", "escalation")
    )
    assert policy.next_tool(resolver) == "initiate_refund"
    ticket.done += ("initiate_refund",)
    assert policy.next_tool(resolver) == "escalate_issue"
    assert policy.next_tool(desk) == "approve_refund"
    ticket.done += ("approve_refund",)
    assert policy.next_tool(desk) == "respond_user"
