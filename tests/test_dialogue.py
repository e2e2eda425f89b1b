"""Customers' replies to ask_customer: cues in the customer's voice, never the center's labels."""

from __future__ import annotations

import re

import pytest

from csr_marl.config.loading import load_scenario, load_ticket_bank
from csr_marl.sim.center import ContactCenter
from csr_marl.sim.dialogue import AUTO_ORDER, FACT_OF_TOPIC, TOPICS, CustomerReply, customer_reply, topic_of
from csr_marl.sim.tickets import Ticket

SCENARIO = load_scenario("standard_day")
BANK = load_ticket_bank(SCENARIO.tickets.bank)
PAIRS = [(fact, value) for fact, values in BANK.fact_values.items() for value in values]
TOPIC_OF_FACT = {"order_status": "order", "payment_status": "payment", "device_state": "device"}
# Every label the center uses: a reply must name none of them, spelled as an id or as words.
LABELS = sorted({*BANK.fact_values, *(value for _, value in PAIRS)})
QUESTIONS = {
    "order": "Do you have the order number?",
    "payment": "What does your card statement show?",
    "device": "Is the camera light on?",
    "account": "Can you log in to your account?",
    "other": "Anything else?",
}


@pytest.fixture(scope="module")
def tickets() -> list[Ticket]:
    center = ContactCenter(SCENARIO, seed=0)
    return [center.factory.new(0.0) for _ in range(4)]


def _ticket(template: Ticket, facts: dict[str, str], slots: dict[str, str] | None = None, id: int = 7) -> Ticket:
    """A fresh ticket like ``template`` with the given hidden facts and slot values."""
    ticket = Ticket()
    for name in ("contact", "template", "case", "requirement", "tier", "subject", "body", "text", "customer"):
        setattr(ticket, name, getattr(template, name))
    ticket.id = id
    ticket.facts = facts
    ticket.slot_values = dict(template.slot_values if slots is None else slots)
    return ticket


def _names_a_label(text: str) -> str | None:
    lowered = text.lower()
    for label in LABELS:
        for spelling in {label, label.replace("_", " ")}:
            if re.search(rf"\b{re.escape(spelling)}\b", lowered):
                return spelling
    return None


SLOTS = {"order_id": "4821357", "amount": "84.99", "last4": "4417", "product": "Outdoor Cam Pro", "carrier": "UPS"}


@pytest.mark.parametrize("fact,value", PAIRS)
def test_every_fact_value_gets_a_cue_in_the_customers_words(tickets: list[Ticket], fact: str, value: str) -> None:
    topic = TOPIC_OF_FACT[fact]
    topics = (topic, "account") if fact == "device_state" else (topic,)
    for ticket_id in range(3):  # every phrasing of the value
        for slots in (SLOTS, {}):
            ticket = _ticket(tickets[0], {fact: value}, slots, id=ticket_id)
            for asked in topics:
                reply = customer_reply(ticket, QUESTIONS[asked])
                assert reply.topic == asked and reply.text.strip() and reply.informative
                assert "{" not in reply.text and "}" not in reply.text
                assert _names_a_label(reply.text) is None, (reply.text, _names_a_label(reply.text))
                if slots and topic == "order":
                    assert "4821357" in reply.text
                if slots and topic == "payment":
                    assert "$84.99" in reply.text


def test_the_example_of_the_brief() -> None:
    center = ContactCenter(SCENARIO, seed=0)
    ticket = _ticket(center.factory.new(0.0), {"payment_status": "duplicate_capture"}, SLOTS, id=0)
    reply = customer_reply(ticket, "Can you tell me what you see on your card statement?")
    assert reply == CustomerReply(
        "payment",
        "I can see two identical charges for $84.99 on my card ending in 4417, both on the 1st, for the same order.",
        repeated=False, informative=True,
    )


@pytest.mark.parametrize(
    "question,topic",
    [
        ("Can you give me your order number?", "order"),
        ("What does the tracking page say about the package?", "order"),
        ("Has the parcel arrived at your address?", "order"),
        ("Which carrier delivered it - UPS or FedEx?", "order"),
        ("How much were you charged?", "payment"),
        ("Was your order charged twice?", "payment"),  # tie: payment is more specific than order
        ("Is the $84.99 still pending on your bank statement?", "payment"),
        ("Did the refund reach your card?", "payment"),
        ("Is the camera's light blinking?", "device"),
        ("Which firmware version does the app show?", "device"),
        ("Is your Wi-Fi connected?", "device"),
        ("Can you log in to your account?", "account"),
        ("Did you get an email about a password change?", "account"),
        ("Can you sign in to the app?", "account"),  # tie: account before device
        ("Has our fraud team flagged your account?", "other"),  # internal: the customer cannot know
        ("What does the warehouse show for your order?", "other"),
        ("How can I help you today?", "other"),
        ("", "other"),
    ],
)
def test_topic_of(question: str, topic: str) -> None:
    assert topic_of(question) == topic
    assert topic in TOPICS


def test_internal_questions_get_an_honest_i_dont_know(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[0], {"payment_status": "fraud_suspected"}, SLOTS)
    reply = customer_reply(ticket, "Has your card been flagged by our risk system?")
    assert reply.topic == "other" and not reply.informative
    assert "don't know" in reply.text and "check" in reply.text


def test_a_topic_the_ticket_has_no_fact_for_is_not_informative(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[0], {"device_state": "hardware_fault"}, SLOTS)
    reply = customer_reply(ticket, QUESTIONS["payment"])
    assert reply.topic == "payment" and not reply.informative
    assert "$84.99" in reply.text and ticket.subject in reply.text
    other = customer_reply(ticket, QUESTIONS["other"])
    assert other.topic == "other" and not other.informative and ticket.customer in other.text


def test_repeated_topics_are_flagged_and_annoyed(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[0], {"order_status": "lost"}, SLOTS)
    first = customer_reply(ticket, "Where is the package?")
    assert not first.repeated
    ticket.questions += (first.topic,)  # what the core does
    again = customer_reply(ticket, "Any news from the carrier about the order?")
    assert again.repeated and again.topic == "order"
    assert again.text == "As I already told you: " + first.text
    assert not customer_reply(ticket, QUESTIONS["payment"]).repeated


def test_replies_are_deterministic_and_leave_the_ticket_alone(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[1], {"order_status": "delayed", "payment_status": "refund_pending"}, SLOTS)
    before = (list(ticket.questions), dict(ticket.revealed), ticket.sentiment)
    replies = [customer_reply(ticket, q) for q in (None, *QUESTIONS.values())]
    assert replies == [customer_reply(ticket, q) for q in (None, *QUESTIONS.values())]
    assert (list(ticket.questions), dict(ticket.revealed), ticket.sentiment) == before
    # Phrasings vary across customers, chosen by ticket id (never by a random stream).
    texts = {customer_reply(_ticket(tickets[1], {"order_status": "delayed"}, SLOTS, id=i), None).text for i in range(4)}
    assert len({text[:25] for text in texts}) == 2  # two phrasings of the value


def test_none_asks_the_first_hidden_unasked_topic_in_the_documented_order(tickets: list[Ticket]) -> None:
    assert AUTO_ORDER == ("order", "payment", "device")
    facts = {"device_state": "needs_reset", "payment_status": "billing_error", "order_status": "delayed"}
    ticket = _ticket(tickets[2], facts, SLOTS)
    assert customer_reply(ticket, None).topic == "order"
    ticket.revealed["order_status"] = "delayed"  # a tool revealed it: skip
    assert customer_reply(ticket, None).topic == "payment"
    ticket.questions += ("payment",)  # asked already: skip
    assert customer_reply(ticket, None).topic == "device"
    ticket.questions += ("account",)  # the account question covered the device's fact
    reply = customer_reply(ticket, None)
    assert reply.topic == "other" and not reply.informative and not reply.repeated


def test_a_revealed_fact_is_not_informative(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[3], {"payment_status": "failed_but_captured"}, SLOTS)
    assert customer_reply(ticket, QUESTIONS["payment"]).informative
    ticket.revealed["payment_status"] = "failed_but_captured"
    reply = customer_reply(ticket, QUESTIONS["payment"])
    assert not reply.informative and "$84.99" in reply.text  # the customer still says what they see


def test_an_upset_customer_says_so(tickets: list[Ticket]) -> None:
    ticket = _ticket(tickets[0], {"order_status": "lost"}, SLOTS)
    calm = customer_reply(ticket, QUESTIONS["order"]).text
    ticket.sentiment = -0.8
    assert customer_reply(ticket, QUESTIONS["order"]).text.startswith(calm) and "too long" in customer_reply(
        ticket, QUESTIONS["order"]
    ).text


def test_topics_map_to_the_facts_tools_reveal() -> None:
    from csr_marl.config.domain import FACT_REVEALED_BY

    assert set(FACT_OF_TOPIC.values()) == set(FACT_REVEALED_BY)
    assert set(FACT_OF_TOPIC) | {"other"} == set(TOPICS)
