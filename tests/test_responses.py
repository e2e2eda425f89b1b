"""The reply rubric (csr_marl.sim.responses) on real tickets of the default bank."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csr_marl import load_scenario
from csr_marl.config.domain import DIAGNOSTIC_TOOLS, FACT_REVEALED_BY, RESOLVER_WORK_TOOLS, SPECIALIST_WORK_TOOLS
from csr_marl.policies import make_policy
from csr_marl.sim import responses
from csr_marl.sim import reply_wording as wording
from csr_marl.sim.center import ContactCenter
from csr_marl.sim.decisions import Phase
from csr_marl.sim.responses import (
    MAX_SCORE,
    WEIGHTS,
    documented_cache_info,
    documented_reply,
    grade_documented,
    grade_reply,
    is_upset,
)

# Words from every corner of the rubric's vocabulary: what a reply that games it would paste.
STUFFING = (
    "refund refunded credited reimbursed replacement reship redirect trace expedite reset engineers fix "
    "patch fraud review recovered secured legal approved sorry apologies thank please appreciate outage "
    "status page update instructions steps settings pending hold delivered in transit customs backorder"
)


@pytest.fixture(scope="module")
def drawn() -> list:
    """Fresh tickets from the standard day's factory: every template and case of the default bank."""
    center = ContactCenter(load_scenario("standard_day"), seed=0)
    return [center.factory.new(0.0) for _ in range(6000)]


def pick(drawn: list, template: str, facts: dict[str, str], *, upset: bool | None = None):
    for ticket in drawn:
        if ticket.template.id == template and ticket.case.facts == facts:
            if upset is None or is_upset(ticket) == upset:
                return ticket
    raise LookupError(f"no {template} {facts} ticket drawn")


def at(ticket, done: list[str] | None = None, *, stage: str | None = None, sentiment: float = 0.0,
       contact: int = 0):
    """A copy of ``ticket`` after ``done`` (default: the whole workflow, at the desk when it needs one)."""
    ticket = copy.copy(ticket)
    requirement = ticket.requirement
    ticket.done = tuple(done) if done is not None else (*requirement.steps, *requirement.specialist)
    ticket.revealed = {f: v for f, v in ticket.facts.items() if FACT_REVEALED_BY[f] in ticket.done}
    ticket.stage = stage or ("escalation" if set(requirement.specialist) & set(ticket.done) else "resolver")
    ticket.sentiment = sentiment
    ticket.contact = contact
    return ticket


def changed(a, b) -> set[str]:
    return {part for part in WEIGHTS if a.parts[part] != pytest.approx(b.parts[part])}


def check_sums(grade) -> None:
    assert sum(grade.parts.values()) * grade.factor == pytest.approx(grade.score, abs=1e-6)
    assert 0.0 <= grade.score <= MAX_SCORE
    for part, value in grade.parts.items():
        assert 0.0 <= value <= WEIGHTS[part] + 1e-9, part


# --- honest replies -----------------------------------------------------------------------------------
def refund_case(drawn):
    ticket = at(pick(drawn, "billing.double_charge", {"payment_status": "duplicate_capture"}))
    s = ticket.slot_values
    reply = (f"Hi {ticket.customer}, I'm sorry about the double charge on order #{s['order_id']}. I checked "
             f"the payment: it was captured twice, so I have refunded the duplicate ${s['amount']} to your "
             "card. Thank you for your patience.")
    return ticket, reply


def honest_cases(drawn):
    yield refund_case(drawn)
    t = at(pick(drawn, "shipping.where_is_my_order", {"order_status": "delayed"}))
    yield t, (f"Hello {t.customer}, thanks for reaching out about order {t.slot_values['order_id']}. Your "
              "parcel got stuck at a carrier hub, so I opened a trace with the carrier and expedited it. "
              "Sorry for the wait, and please let me know if anything else comes up.")
    t = at(pick(drawn, "technical.camera_offline", {"device_state": "known_outage"}))
    yield t, (f"Hi {t.customer}, sorry your {t.slot_values['camera']} went offline. This is part of a known "
              "outage that we are tracking, and you can follow it on our status page. Thanks for bearing "
              "with us.")
    t = at(pick(drawn, "general.account_locked", {}))
    yield t, (f"Hi {t.customer}, I have reset your account, so you can sign in and arm your system again. "
              "Sorry for the hassle, and thank you for your patience.")
    t = at(pick(drawn, "technical.service_outage", {"device_state": "needs_engineering"}))
    yield t, (f"Hi {t.customer}, I'm sorry for the disruption. Our engineers found the defect and deployed "
              "a fix, so the service works normally again. Thank you for your patience.")
    t = at(pick(drawn, "billing.large_refund_request", {"payment_status": "over_refund_limit"}))
    yield t, (f"Dear {t.customer}, apologies for the wait on invoice {t.slot_values['invoice_id']}. The "
              f"refund of ${t.slot_values['amount']} was above the standard limit, so our billing team "
              "approved it and it has been refunded to your account. Kind regards.")


def test_honest_complete_replies_score_high_in_every_category(drawn) -> None:
    categories = set()
    for ticket, reply in honest_cases(drawn):
        assert ticket.resolvable()
        grade = grade_reply(ticket, reply)
        assert grade.score >= 0.4, (ticket, reply, grade)
        assert grade.parts["resolution"] == pytest.approx(WEIGHTS["resolution"]), grade.notes
        assert grade.factor == 1.0
        check_sums(grade)
        categories.add(ticket.true_category)
    assert categories == {"billing", "shipping", "technical", "general"}


def test_weights_sum_to_the_maximum() -> None:
    assert sum(WEIGHTS.values()) == pytest.approx(MAX_SCORE)


# --- required facts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("part, drop", [
    ("name", lambda t, r: r.replace(f"Hi {t.customer},", "Hi,")),
    ("case_id", lambda t, r: r.replace(f"order #{t.slot_values['order_id']}", "your order")),
    ("amount", lambda t, r: r.replace(f"${t.slot_values['amount']}", "charge")),
])
def test_a_missing_fact_loses_exactly_its_part(drawn, part, drop) -> None:
    ticket, reply = refund_case(drawn)
    full, partial = grade_reply(ticket, reply), grade_reply(ticket, drop(ticket, reply))
    assert changed(full, partial) == {part}
    assert partial.parts[part] == 0.0
    assert full.score - partial.score == pytest.approx(WEIGHTS[part])
    assert len(partial.notes) == 1


@pytest.mark.parametrize("id_form, amount_form", [
    ("#{}", "${}"), ("order {}", "{} USD"), ("Order No. {}", "USD {}"), ("({})", "$ {}"),
])
def test_ids_and_amounts_match_in_any_common_form(drawn, id_form, amount_form) -> None:
    ticket, _ = refund_case(drawn)
    s = ticket.slot_values
    reply = (f"hi {ticket.customer.lower()}, sorry! For {id_form.format(s['order_id'])} the payment was captured "
             f"twice, so I have refunded {amount_form.format(s['amount'])} to your card. Thanks for your patience.")
    grade = grade_reply(ticket, reply)
    assert grade.parts["name"] and grade.parts["case_id"] and grade.parts["amount"], grade.notes


def test_a_wrong_or_partial_id_and_amount_do_not_count(drawn) -> None:
    ticket, reply = refund_case(drawn)
    order, amount = ticket.slot_values["order_id"], ticket.slot_values["amount"]
    wrong = reply.replace(order, order[:-1]).replace(amount, f"{float(amount) + 1:.2f}")
    grade = grade_reply(ticket, wrong)
    assert grade.parts["case_id"] == 0.0 and grade.parts["amount"] == 0.0


def test_any_of_the_tickets_identifiers_names_the_case(drawn) -> None:
    ticket = at(pick(drawn, "billing.large_refund_request", {"payment_status": "over_refund_limit"}))
    invoice = ticket.slot_values["invoice_id"]  # INV-123456: "invoice 123456" names it too
    for form in (invoice, invoice.lower(), invoice.replace("INV-", "invoice "), ticket.slot_values["order_id"]):
        notes = grade_reply(ticket, f"About {form}: done.").notes
        assert not any("does not name the order" in note for note in notes), form


def test_identifiers_alone_earn_nothing_without_findings(drawn) -> None:
    """A reply that only copies the name, id and amount from the ticket tells the customer nothing:
    the facts parts count in proportion to the findings and actions it states."""
    ticket = at(pick(drawn, "billing.large_refund_request", {"payment_status": "over_refund_limit"}))
    slots = ticket.slot_values
    copied = f"Hi {ticket.customer}, about order {slots['order_id']} and ${slots['amount']}: thank you for waiting."
    grade = grade_reply(ticket, copied)
    assert grade.parts["name"] == grade.parts["case_id"] == grade.parts["amount"] == 0.0
    assert grade.score <= grade_reply(ticket, "Thank you for contacting us. We have handled your request. Have a nice day.").score + 1e-9


# --- tone ---------------------------------------------------------------------------------------------
def calm_address_ticket(drawn):
    return pick(drawn, "shipping.wrong_address", {"order_status": "wrong_address"}, upset=False)


def test_upset_is_sentiment_below_the_threshold_a_return_or_angry_text(drawn) -> None:
    calm = calm_address_ticket(drawn)
    assert responses.UPSET_BELOW == pytest.approx(-0.3)
    assert not is_upset(at(calm, sentiment=0.0))
    assert not is_upset(at(calm, sentiment=-0.2))
    assert is_upset(at(calm, sentiment=-0.5))
    assert is_upset(at(calm, contact=1))
    cue = next(t for t in drawn if t.template.id == "billing.double_charge" and t.subject.startswith("Charged"))
    assert "Charged twice" in cue.subject and is_upset(at(cue))  # the template's priority cue, nothing else
    shouted = next(t for t in drawn if t.template.id == "shipping.cancel_order" and "!!" in t.text)
    assert is_upset(at(shouted))
    capitals = next(t for t in drawn if "ADDRESS WRONG" in t.text)
    assert is_upset(at(capitals))


# Pieces that sit on the edges of the anger words, the cues and the shout rule: word boundaries,
# capitals next to letters, digits and underscores, non-ASCII letters, punctuation runs.
_EDGES = ("A", "Z", "a", "q", "1", "_", " ", "!", "?", "\n", "É", "é", "-", "'", "ANGRY", "Angry", "urgently",
          "right now", "right  now", "fed up", "FRUSTRATED", "scams", "outraged", "USPS", "GDPR", "charged twice")


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(_EDGES), max_size=12), which=st.integers(0, 10_000))
def test_the_upset_scan_is_its_plain_definition(drawn, pieces, which) -> None:
    """The scan's shortcuts (a literal test before the anger regex, a shout pattern that starts at a
    capital) find exactly what the plain patterns find: anger words or the template's cues between word
    boundaries, or a word of four capitals that is not an acronym or a slot value."""
    text = "".join(pieces)
    template = drawn[which % len(drawn)].template
    cues = [re.escape(c.lower()) for c in template.priority.cues]
    plain_anger = re.compile("|".join([responses._ANGER.pattern, *cues]))
    shouted = [w for w in re.findall(r"\b[A-Z]{4,}\b", text) if w not in responses.ACRONYMS]
    assert responses._SHOUT_WORD.findall(text) == re.findall(r"\b[A-Z]{4,}\b", text)
    assert responses._scan_upset(template, text, {}) == bool(plain_anger.search(text.lower()) or shouted)


# Pieces on the edges of the clause, negation and vocabulary patterns.
_CLAUSE_EDGES = ("not", "no", "nothing", "never", "cannot", "unable", "don't", "n't", "nots", "snot", "_no", "no_",
                 "é", "but", " but ", "however", " though ", "\n", "\n\n", "\t", " ", ".", "..", ",", ";", ":", "!",
                 "?", "84", ".99", "$84.99", "refunded", "refund", "sorry", "thank", "address was updated",
                 "steps", "step", "reship", "re-routed", "a", "s")


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(_CLAUSE_EDGES), max_size=16))
def test_clause_negation_and_vocabulary_patterns_are_their_plain_definitions(pieces) -> None:
    """Written to start with a character class or a letter (so the engine skips ahead), the clause
    breaks, negations and rubric vocabulary match exactly where the plain patterns match."""
    text = "".join(pieces)
    plain_clause = re.compile(r"(?:[.!?;:,](?!\d))+|\n+|\s(?:but|however|although|though)\s")
    plain_negation = re.compile(r"\b(?:not|no|never|cannot|nothing|unable)\b|n't\b")
    plain_vocabulary = re.compile(r"\b(?:" + "|".join(responses._VOCABULARY_STEMS) + ")")

    def spans(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(text)]

    assert spans(responses._CLAUSE) == spans(plain_clause)
    assert spans(responses._NEGATION) == spans(plain_negation)
    assert spans(responses._VOCABULARY) == spans(plain_vocabulary)


@pytest.mark.parametrize("stems", [
    ("s?hip", "sorry", "ship"), ("ab|c", "d", "ax"), ("a[(]b|ac", "ad"), (r"\$5", "a"), ("steps?\\b", "stop", "sta"),
])
def test_alternation_groups_stems_by_letter_only_where_that_keeps_every_match(stems) -> None:
    """A stem whose first letter is optional, or with an ``|`` of its own, or that starts with an escape,
    is not grouped: the pattern then matches exactly as the plain alternation does."""
    plain = re.compile(r"\b(?:" + "|".join(stems) + ")")
    grouped = responses._alternation(stems)
    for text in ("hip ship sorry", "ab c d ax", "a(b ac ad", "$5 a", "steps stop star step", "c|d abc"):
        assert [m.span() for m in grouped.finditer(text)] == [m.span() for m in plain.finditer(text)], text


def test_no_apology_to_an_upset_customer_loses_the_apology(drawn) -> None:
    calm = calm_address_ticket(drawn)
    reply = (f"Hi {calm.customer}, thanks for the details on order {calm.slot_values['order_id']}. I asked the "
             "carrier to redirect the parcel to your corrected address. Please reply if anything else is needed.")
    content, upset = grade_reply(at(calm), reply), grade_reply(at(calm, sentiment=-0.6), reply)
    assert content.score == MAX_SCORE, content.notes
    assert changed(content, upset) == {"apology"}
    assert "no apology to an upset customer" in upset.notes
    apologising = grade_reply(at(calm, sentiment=-0.6), reply.replace("thanks", "sorry for the trouble and thanks"))
    assert apologising.score == MAX_SCORE


def test_blame_is_penalised(drawn) -> None:
    ticket, reply = refund_case(drawn)
    blamed = grade_reply(ticket, reply + " You should have checked your statement before writing to us.")
    assert changed(grade_reply(ticket, reply), blamed) == {"no_blame"}
    assert any("blames the customer" in note for note in blamed.notes)


def test_no_thanks_or_please_loses_courtesy(drawn) -> None:
    ticket, reply = refund_case(drawn)
    assert changed(grade_reply(ticket, reply), grade_reply(ticket, reply.replace(" Thank you for your patience.", ""))) == {"courtesy"}


# --- forbidden promises -------------------------------------------------------------------------------
def hold_case(drawn):
    ticket = at(pick(drawn, "billing.double_charge", {"payment_status": "authorization_hold"}))
    s = ticket.slot_values
    honest = (f"Hi {ticket.customer}, sorry for the worry about order #{s['order_id']}. The second ${s['amount']} "
              "is only a pending authorization hold that drops off by itself. Thank you for your patience.")
    return ticket, honest


def test_a_refund_promised_but_not_made_loses_the_promise_part(drawn) -> None:
    ticket, honest = hold_case(drawn)
    assert ticket.done == ("check_payment",) and ticket.resolvable()
    assert grade_reply(ticket, honest).score == MAX_SCORE
    s = ticket.slot_values
    for claim in ("I have refunded the {a} to your card.", "We will refund the {a} today.",
                  "A refund of {a} has been issued.", "You will receive a full refund of {a}."):
        lied = honest.replace("The second", claim.format(a=f"${s['amount']}") + " The second")
        grade = grade_reply(ticket, lied)
        assert grade.parts["no_false_refund"] == 0.0, claim
        assert "claims a refund that was not made" in grade.notes
    negated = honest + " We will not refund it because nothing extra was taken."
    assert grade_reply(ticket, negated).parts["no_false_refund"] == WEIGHTS["no_false_refund"]


def test_an_existing_refund_may_be_mentioned(drawn) -> None:
    ticket = at(pick(drawn, "billing.refund_status", {"payment_status": "refund_pending"}))
    assert "initiate_refund" not in ticket.done
    grade = grade_reply(ticket, "Hi, your refund was issued last week and is on its way through your bank.")
    assert grade.parts["no_false_refund"] == WEIGHTS["no_false_refund"]


def test_a_fix_or_replacement_not_applied_loses_the_promise_part(drawn) -> None:
    outage = at(pick(drawn, "technical.camera_offline", {"device_state": "known_outage"}))
    grade = grade_reply(outage, f"Hi {outage.customer}, sorry, our engineers fixed the problem. Thanks!")
    assert grade.parts["no_false_fix"] == 0.0 and "claims a engineering fix that was not made" in grade.notes
    delivered = at(pick(drawn, "shipping.where_is_my_order", {"order_status": "delivered"}))
    grade = grade_reply(delivered, "Sorry it has not turned up. We sent you a replacement. Thanks for waiting.")
    assert grade.parts["no_false_fix"] == 0.0
    faulty = at(pick(drawn, "technical.camera_offline", {"device_state": "hardware_fault"}), ["troubleshoot"])
    assert grade_reply(faulty, "Your replacement camera has shipped, thank you!").parts["no_false_fix"] == 0.0
    done = at(pick(drawn, "technical.camera_offline", {"device_state": "hardware_fault"}))
    assert grade_reply(done, "Your replacement camera has shipped, thank you!").parts["no_false_fix"] > 0


# --- guards -------------------------------------------------------------------------------------------
def test_keyword_stuffing_and_one_word_replies_score_far_below_an_honest_reply(drawn) -> None:
    ticket, reply = refund_case(drawn)
    honest = grade_reply(ticket, reply).score
    s = ticket.slot_values
    stuffed = grade_reply(ticket, f"{ticket.customer} #{s['order_id']} ${s['amount']} {STUFFING}")
    assert stuffed.score <= honest - 0.25 and any(n.startswith("stuffing") for n in stuffed.notes)
    repeated = grade_reply(ticket, reply + " refunded refunded refunded refunded refunded refunded")
    assert repeated.score <= honest - 0.25 and any(n.startswith("stuffing") for n in repeated.notes)
    phrase = grade_reply(ticket, reply + " Thank you so much. Thank you so much. Thank you so much.")
    assert any(n.startswith("stuffing") for n in phrase.notes)
    for short in ("Refunded.", "", "Sorry, refunded."):
        grade = grade_reply(ticket, short)
        assert grade.score < 0.1 and any(n.startswith("too short") for n in grade.notes), short
    shouted = grade_reply(ticket, reply.upper())
    assert shouted.score <= honest - 0.2 and any(n.startswith("shouting") for n in shouted.notes)
    long = grade_reply(ticket, reply + " " + " ".join(f"word{i}" for i in range(300)))
    assert long.score <= honest / 2 and any(n.startswith("too long") for n in long.notes)


def test_a_reply_to_an_unresolvable_ticket_scores_below_the_same_reply_after_the_workflow(drawn) -> None:
    ticket, reply = refund_case(drawn)
    before = grade_reply(at(ticket, ["check_payment"]), reply)
    after = grade_reply(ticket, reply)
    assert before.score <= after.score - 0.25
    assert before.parts["resolution"] == 0.0 and before.factor == responses.GUARDS["unfinished"]
    desk = pick(drawn, "technical.service_outage", {"device_state": "needs_engineering"})
    message = "Hi, I'm sorry for the trouble: I checked it and there is a defect. Thank you for your patience."
    resolver = at(desk, ["troubleshoot"], stage="resolver")
    assert not resolver.resolvable()
    assert grade_reply(resolver, message).score < grade_reply(at(desk), message).score


# --- properties ---------------------------------------------------------------------------------------
@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_any_text_scores_within_bounds(drawn, text) -> None:
    check_sums(grade_reply(refund_case(drawn)[0], text))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(STUFFING.split() + ["Maria", "#4821357", "$84.99", "!!", "SORRY", "not"]),
                max_size=120))
def test_any_mix_of_rubric_words_scores_within_bounds_and_below_the_maximum(drawn, words) -> None:
    ticket, reply = refund_case(drawn)
    grade = grade_reply(ticket, " ".join(words))
    check_sums(grade)
    assert grade.score < grade_reply(ticket, reply).score


def test_grades_are_deterministic(drawn) -> None:
    for ticket, reply in honest_cases(drawn):
        assert grade_reply(ticket, reply) == grade_reply(copy.copy(ticket), reply)


def test_a_message_must_be_text(drawn) -> None:
    with pytest.raises(TypeError, match="must be a string"):
        grade_reply(refund_case(drawn)[0], None)  # type: ignore[arg-type]


# --- the documented reply -----------------------------------------------------------------------------
def every_case(drawn) -> list:
    cases = {}
    for ticket in drawn:
        cases.setdefault((ticket.template.id, id(ticket.case)), ticket)
    return list(cases.values())


def test_every_case_of_the_bank_is_drawn(drawn) -> None:
    from csr_marl.config.loading import load_ticket_bank
    bank = load_ticket_bank(load_scenario("standard_day").tickets.bank)
    assert len(every_case(drawn)) == sum(len(t.cases) for t in bank.templates)


def test_the_documented_reply_scores_high_after_the_workflow_and_low_before(drawn) -> None:
    for ticket in every_case(drawn):
        finished = grade_documented(at(ticket))
        assert finished.score >= 0.4, (ticket, documented_reply(at(ticket)), finished.notes)
        assert not any("claims" in note for note in finished.notes)
        steps = ticket.requirement.steps
        if steps:
            early = grade_documented(at(ticket, steps[:-1], stage="resolver"))
            assert early.score < 0.4 and early.score < finished.score
            assert not any("claims" in note for note in early.notes), documented_reply(at(ticket, steps[:-1]))


def test_the_documented_reply_reads_only_the_visible_state(drawn) -> None:
    ticket = pick(drawn, "billing.double_charge", {"payment_status": "duplicate_capture"})
    other = pick(drawn, "billing.double_charge", {"payment_status": "authorization_hold"})
    a = at(ticket, ["check_payment"])
    b = copy.copy(a)
    b.case, b.facts, b.requirement = other.case, other.facts, other.requirement  # hidden truth differs
    assert documented_reply(a) == documented_reply(b)
    reply = documented_reply(at(ticket, sentiment=-0.9))
    for shown in (ticket.customer, ticket.slot_values["order_id"], ticket.slot_values["amount"], "sorry",
                  "refunded"):
        assert shown in reply


def test_grade_documented_is_the_documented_replys_grade_for_tickets_in_any_state(drawn) -> None:
    for ticket in drawn[:1500]:
        steps = [*ticket.requirement.steps, *ticket.requirement.specialist]
        for state in (at(ticket, []), at(ticket, steps[:1]), at(ticket), at(ticket, sentiment=-0.7)):
            assert grade_documented(state) == grade_reply(state, documented_reply(state)), state


def test_grade_documented_is_cached(drawn, monkeypatch) -> None:
    monkeypatch.setattr(responses, "_DOCUMENTED", {})  # what other tests graded is not in it
    ticket = at(pick(drawn, "shipping.where_is_my_order", {"order_status": "lost"}))
    first = grade_documented(ticket)
    hits, misses, _ = documented_cache_info()  # a miss is a grade worked out (the rubric ran)
    assert grade_documented(ticket) is first
    twin = next(at(t) for t in drawn if t.case is ticket.case and t.customer != ticket.customer
                and is_upset(t) == is_upset(ticket))  # another customer, the same state
    assert grade_documented(twin) is first
    assert documented_cache_info()[:2] == (hits + 2, misses)
    wasted = at(ticket, ["check_order_status", "reset_account"])  # a state not graded above
    assert grade_documented(wasted) == grade_reply(wasted, documented_reply(wasted))
    assert documented_cache_info()[:2] == (hits + 2, misses + 1)


def test_diagnostic_tools_have_no_wording_of_their_own() -> None:
    # grade_documented's key keeps only the work tools of `done`: a diagnostic reaches the grade only
    # through what it revealed and `resolvable`, as long as it has no sentence, item, claim or refund words.
    worded = {*wording.ACTIONS, *wording.ACTION_WORDS, *wording.REFUND_TOOLS, *wording.SHIPPING_WORDS,
              *(tool for tools, _, _ in wording.CLAIMS.values() for tool in tools)}
    assert DIAGNOSTIC_TOOLS and not DIAGNOSTIC_TOOLS & worded


def test_grade_documented_is_exact_after_any_steps_in_any_order(drawn) -> None:
    # Wasted diagnostics, steps in any order, work tools of the other stage, tickets of every template
    # of a category sharing cache entries: the cached grade is always the documented reply's own.
    rng = np.random.default_rng(5)
    tools = sorted(DIAGNOSTIC_TOOLS | RESOLVER_WORK_TOOLS | SPECIALIST_WORK_TOOLS)
    misses = documented_cache_info().misses
    for ticket in drawn[:2500]:
        done = [str(t) for t in rng.permutation(tools)[:rng.integers(0, 6)]]
        state = at(ticket, done, stage=str(rng.choice(["resolver", "escalation"])),
                   sentiment=float(rng.choice([0.0, -0.7])), contact=int(rng.integers(0, 2)))
        revealed = state.revealed  # in the order the steps revealed it, as in a run
        in_order = sorted(revealed, key=lambda fact: done.index(FACT_REVEALED_BY[fact]))
        state.revealed = {fact: revealed[fact] for fact in in_order}
        assert grade_documented(state) == grade_reply(state, documented_reply(state)), (state, done)
    assert documented_cache_info().misses - misses < 2000  # the key shares entries, or this tests nothing


READING_FIELDS = ("low", "words", "affirmed", "apology", "blame", "courtesy", "vocabulary", "bangs", "shouted",
                  "letters", "capitals")


def reading_of(reading) -> tuple:
    return tuple(getattr(reading, field) for field in READING_FIELDS)


def test_the_documented_reply_is_read_by_sentence_as_a_whole(drawn, monkeypatch) -> None:
    # grade_documented reads each sentence of the documented reply once (kept by its text) and joins
    # the readings; they must be the reading of the whole reply, field for field, in every state.
    monkeypatch.setattr(responses, "_SENTENCE_READINGS", {})
    rng = np.random.default_rng(11)
    tools = sorted(DIAGNOSTIC_TOOLS | RESOLVER_WORK_TOOLS | SPECIALIST_WORK_TOOLS)
    for ticket in drawn[:1500]:
        done = [str(t) for t in rng.permutation(tools)[:rng.integers(0, 7)]]
        state = at(ticket, done, sentiment=float(rng.choice([0.0, -0.7])), contact=int(rng.integers(0, 2)))
        sentences = responses._documented_sentences(state)
        assert reading_of(responses._read_sentences(sentences)) == reading_of(responses._read(" ".join(sentences)))
    # Sentences that must be read with their neighbours (a contrasting word or a space first, no
    # clause break last), negations, shouting, blame and numbers on either side of the join.
    odd = [
        ["Hi ANNA,", "but we could not refund you.", "Sorry, that is YOUR FAULT!!"],
        ["I refunded $84.99", "however, not the fee.", "Thank you."],
        ["We never shipped it.", " Refunded.", "HELLO THERE WORLD."],
        ["Order 4821357, invoice INV-123456.", "Your parcel was redirected; no refund yet.", "Regards,"],
        ["As I said before, read the manual.", "You should have known.", "Please hold."],
    ]
    for sentences in odd:
        assert reading_of(responses._read_sentences(sentences)) == reading_of(responses._read(" ".join(sentences)))


def test_no_rubric_phrase_holds_a_clause_break() -> None:
    # What lets the documented reply be read sentence by sentence: a phrase with ". " or ", " in it could
    # match across two sentences, which their separate readings would miss.
    phrases = [*responses._VOCABULARY_STEMS, *wording.APOLOGY_WORDS, *wording.COURTESY_WORDS,
               *wording.BLAME_PHRASES]
    def may_match_a_break(phrase: str) -> bool:  # a regex stem: "?" is a quantifier, "." any character
        if re.search(r"\\[.!?;:,WsSD]|\[\^", phrase):
            return True
        return re.search(r"[.!;:,]", phrase.replace("(?:", "(").replace("?", "")) is not None

    assert not [p for p in phrases if may_match_a_break(p)]
    assert may_match_a_break("late. r") and may_match_a_break(r"on\W+time") and not may_match_a_break("dut(?:y|ies)?")
    # and each sentence of the playbook's wording ends with a clause break, so it is read apart
    for sentence in [*wording.FINDINGS.values(), *wording.ACTIONS.values(), *wording.SHIPPING_ACTIONS.values()]:
        assert responses._read_sentence(sentence) is not None, sentence


def test_the_documented_reply_is_graded_without_the_echo_guard(drawn, monkeypatch) -> None:
    monkeypatch.setattr(responses, "_DOCUMENTED", {})  # the copier's grade is worked out, not looked up
    ticket = at(pick(drawn, "billing.double_charge", {"payment_status": "duplicate_capture"}))
    copier = copy.copy(ticket)
    copier.text = documented_reply(ticket)  # a customer who wrote the reply the environment writes
    echoed = grade_reply(copier, documented_reply(copier))
    assert any(note.startswith("echo") for note in echoed.notes)
    documented = grade_documented(copier)
    assert not any(note.startswith("echo") for note in documented.notes)
    assert documented == grade_documented(ticket) == grade_reply(ticket, documented_reply(ticket))


def test_documented_replies_of_a_heuristic_run_score_by_resolution() -> None:
    # Train tickets, clean text: the heuristic reads every ticket right, so each close follows a workflow
    # the playbook knows (a misread ticket's wasted steps may have no wording to state them by).
    scenario = load_scenario("standard_day", overrides={"tickets.split": "train", "tickets.noise.enabled": False})
    center = ContactCenter(scenario, seed=3)
    policy = make_policy("heuristic", scenario, np.random.default_rng(3))
    closes = 0
    while closes < 40 and (decision := center.next_decision()) is not None:
        action = policy(decision)
        if decision.phase is Phase.WORK and decision.tool(action) == "respond_user":
            ticket = decision.ticket
            grade = grade_documented(ticket)
            assert (grade.score >= 0.4) == ticket.resolvable(), (ticket, ticket.done, grade.notes)
            closes += 1
        center.decide(action, decision)
    assert closes == 40


# --- the rubric's counting helpers, against their definitions ------------------------------------------
_FEW_WORDS = st.lists(st.sampled_from(["the", "your", "item", "refund", "order", "refund order", "sorry", "thanks"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_FEW_WORDS)
def test_repeated_words_and_phrases_are_counted_as_a_counter_counts_them(pieces) -> None:
    from collections import Counter

    words = tuple(" ".join(pieces).split())  # as a reading holds them
    counts = responses._word_counts(words)
    assert counts == Counter(words)
    long = Counter(w for w in words if len(w) >= 4 and w not in responses._STOP)
    assert responses._most_repeated(counts) == max(long.values(), default=0)
    phrases = Counter(zip(words, words[1:], words[2:]))
    for times in (2, 3, 4):
        assert responses._phrase_repeated(words, counts, times) == (max(phrases.values(), default=0) >= times)


@pytest.mark.parametrize("text", ["inv-123 456/ab", "order #1z9 x", "", "$84.99, café ünï 12", "tab\there\nnew"])
def test_letters_and_digits_keep_exactly_a_to_z_and_0_to_9(text) -> None:
    assert responses._letters_and_digits(text) == re.sub(r"[^a-z0-9]", "", text)


@pytest.mark.parametrize("text", ["inv-123 456/ab", "order #1z9 x", "", "$84.99, 1,200 ١٢٣ café 12", "a1b22\n333"])
def test_digit_runs_are_the_regex_runs(text) -> None:
    assert responses._digit_runs(text) == re.findall(r"\d+", text)


# --- facts with values, denials as claims, echoes of the dialogue (scoring v3) ------------------------
def looked_up(template: str, facts: dict[str, str]):
    """A ticket of a real episode after its workflow, with the records its lookups showed."""
    from csr_marl.sim.fact_details import reveal_detail
    center = ContactCenter(load_scenario("standard_day"), seed=3)
    for _ in range(6000):
        ticket = center.factory.new(0.0)
        if ticket.template.id == template and ticket.case.facts == facts:
            ticket = at(ticket)
            ticket.details = {f: reveal_detail(ticket, f, 3) for f in ticket.revealed}
            return ticket
    raise LookupError(template)


def test_a_finding_is_credited_only_with_the_value_its_lookup_showed() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    detail = ticket.details["payment_status"]
    s = ticket.slot_values
    base = (f"Hi {ticket.customer}, I am sorry. The payment for order #{s['order_id']} was captured twice, so I "
            f"have refunded ${s['amount']} to your card. Thank you for your patience.")
    with_value = base.replace("captured twice", f"captured twice ({detail.text})")
    assert grade_reply(ticket, with_value).score == pytest.approx(0.5)
    assert grade_reply(ticket, base).score < 0.25  # named without the record: not news
    assert "duplicate capture" in " ".join(grade_reply(ticket, base).notes)


def test_denying_the_finding_this_ticket_has_is_a_false_claim() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    s = ticket.slot_values
    denial = (f"Hi {ticket.customer}, I am sorry. There was no duplicate charge on order #{s['order_id']}; I have "
              f"refunded ${s['amount']} to your card. Thank you for your patience.")
    grade = grade_reply(ticket, denial)
    assert grade.score < 0.05 and any(n.startswith("denies a finding") for n in grade.notes)


def test_a_finding_worded_in_the_negative_stays_right() -> None:
    ticket = looked_up("billing.refund_status", {"payment_status": "refund_not_issued"})
    detail = ticket.details["payment_status"]
    s = ticket.slot_values
    reply = (f"Hi {ticket.customer}, I am sorry. The refund for order #{s['order_id']} had not been issued "
             f"({detail.text}), so I have refunded ${s['amount']} to your card. Thank you for your patience.")
    grade = grade_reply(ticket, reply)
    assert grade.score == pytest.approx(0.5), grade.notes


def test_naming_other_cases_findings_in_either_polarity_is_noise() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    detail = ticket.details["payment_status"]
    s = ticket.slot_values
    honest = (f"Hi {ticket.customer}, I am sorry. The payment for order #{s['order_id']} was captured twice "
              f"({detail.text}), so I have refunded ${s['amount']} to your card. Thank you for your patience.")
    noisy = honest + " There was no sign of a backorder or a customs hold."
    assert grade_reply(ticket, honest).score == pytest.approx(0.5)
    assert grade_reply(ticket, noisy).score <= 0.1


def test_guessed_dates_and_record_numbers_are_counted() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    s = ticket.slot_values
    guess = (f"Hi {ticket.customer}, I am sorry. The payment for order #{s['order_id']} was captured twice on "
             f"January 1, February 2, March 3 (transactions 111111, 222222), so I have refunded ${s['amount']} to "
             "your card. Thank you for your patience.")
    assert any(n.startswith("guessed values") for n in grade_reply(ticket, guess).notes)


def test_quoting_the_customers_answers_back_is_an_echo() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    answer = ("I can see two identical charges for the same amount on my card statement, both on the same "
              "day, and my bank says both of them have gone through already")
    ticket.dialogue = (("What do you see on your statement?", answer),)
    grade = grade_reply(ticket, f"Hi {ticket.customer}, {answer}.")
    assert any(n.startswith("echo") for n in grade.notes)


def test_a_careful_reply_with_day_ranges_guesses_nothing() -> None:
    ticket = looked_up("billing.double_charge", {"payment_status": "duplicate_capture"})
    detail = ticket.details["payment_status"]
    s = ticket.slot_values
    reply = (f"Hi {ticket.customer}, I am sorry. The payment for order #{s['order_id']} was captured twice "
             f"({detail.text}), so I have refunded ${s['amount']} to your card: it shows in 3-5 business days, "
             "at most 7-10 with some banks. Thank you for your patience.")
    assert grade_reply(ticket, reply).score == pytest.approx(0.5)
