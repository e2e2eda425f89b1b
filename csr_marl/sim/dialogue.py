"""What a customer answers when staff ask them something (``ask_customer``), deterministically.

A customer knows what they can see -- their statement, the tracking page, the box on the doorstep,
the light on the camera -- never the center's labels. So a reply gives the cues a real customer would
("I can see two identical charges for $84.99 on my card ending in 4417, both on the 12th"), built
from the ticket's hidden facts and the values its text mentions (order id, amount, product, carrier,
...), and never names a fact or a value (``payment_status``, ``duplicate_capture``).

**Topics.** :func:`topic_of` sorts a question into one of :data:`TOPICS` with keyword rules:

* the question is split into lower-case words; each topic has a word list (:data:`TOPIC_WORDS`,
  e.g. *order*: order, package, tracking, delivery, carrier, address, return, ...; *payment*: charge,
  card, refund, bank, statement, invoice, ...; *device*: camera, app, doorbell, firmware, wifi,
  battery, ...; *account*: account, login, password, email, hacked, ...) and a ``$`` counts for
  *payment*;
* the topic with the most hits wins; ties go to the more specific topic, in the order
  payment, order, account, device;
* no hit -- or a question about what only the company can see (:data:`INTERNAL_WORDS`: fraud or
  risk flags, internal systems, the warehouse, engineering, approval limits) -- is ``other``.

**Facts behind topics.** *order* asks about ``order_status``, *payment* about ``payment_status``,
*device* and *account* about ``device_state`` (an account question gets the account side of it).
The customer answers from the hidden value whether or not a tool revealed it (they do not know what
staff looked up); the reply is *informative* only while the fact is still unrevealed. A topic whose
fact the ticket does not have gets "that's fine, it's not why I'm writing" and the customer's own
words; ``other`` gets their summary; a question about internal matters gets an honest "I don't
know, can't you check on your side?".

**Vector agents** cannot write, so they ask ``question=None``: the customer is asked about the first
topic in :data:`AUTO_ORDER` (order, payment, device) whose fact is hidden and was not asked about yet
(by any topic), else ``other``.

**Repeats.** A topic already in ``ticket.questions`` gets the same answer, annoyed ("As I already
told you: ...") and ``repeated=True``; the core lowers the customer's sentiment for it. Phrasings
are chosen by the ticket's id, never from a random stream, and :func:`customer_reply` does not
change the ticket (the core records the topic).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from .tickets import Ticket

TOPICS: Final[tuple[str, ...]] = ("order", "payment", "device", "account", "other")
FACT_OF_TOPIC: Final[dict[str, str]] = {
    "order": "order_status",
    "payment": "payment_status",
    "device": "device_state",
    "account": "device_state",
}
AUTO_ORDER: Final[tuple[str, ...]] = ("order", "payment", "device")  # what ``question=None`` asks about
TIE_ORDER: Final[tuple[str, ...]] = ("payment", "order", "account", "device")  # specific first

TOPIC_WORDS: Final[dict[str, frozenset[str]]] = {
    "order": frozenset(
        "order orders ordered package packages parcel parcels delivery deliveries deliver shipping "
        "shipment shipped ship tracking track tracked carrier courier arrive arrived arriving address "
        "customs duties box return returned returning dispatch dispatched ups fedex usps dhl ontrac "
        "postman mail doorstep".split()
    ),
    "payment": frozenset(
        "payment payments pay paid paying charge charges charged card cards refund refunds refunded "
        "bank statement invoice bill billed billing price money transaction transactions amount "
        "checkout subscription promo discount tax fee fees debit credit overcharged".split()
    ),
    "device": frozenset(
        "device devices camera cameras cam doorbell lock sensor sensors router firmware version wifi "
        "battery light led offline online connect connection connected install installed setup power "
        "screen video alarm hub chime crash crashes crashing restart reboot settings motion app "
        "notifications notification phone".split()
    ),
    "account": frozenset(
        "account accounts login logins log logged password passwords email username 2fa "
        "verification verify locked hacked profile access signin".split()
    ),
}
INTERNAL_WORDS: Final[frozenset[str]] = frozenset(
    "flag flags flagged risk internal internally warehouse engineering engineers backend "
    "inventory".split()
)
INTERNAL_PHRASES: Final[tuple[str, ...]] = (
    "our system", "our records", "our side", "back office", "approval limit", "refund limit",
    "stock level", "fraud score", "fraud check",
)
_WORD: Final = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class CustomerReply:
    """The customer's answer to one question."""

    topic: str
    text: str
    repeated: bool  # the customer was already asked about this topic
    informative: bool  # the reply carries a cue about a hidden fact no tool revealed yet


def _words(question: str) -> list[str]:
    text = question.lower().replace("wi-fi", "wifi").replace("sign in", "signin").replace("log in", "login")
    return _WORD.findall(text)


def asks_internal(question: str) -> bool:
    """Whether ``question`` is about something only the company can see (see the module docstring)."""
    lowered = question.lower()
    return any(word in INTERNAL_WORDS for word in _words(question)) or any(p in lowered for p in INTERNAL_PHRASES)


def topic_of(question: str) -> str:
    """The topic of ``question`` by the keyword rules of the module docstring."""
    if asks_internal(question):
        return "other"
    words = _words(question)
    hits = {topic: sum(word in vocabulary for word in words) for topic, vocabulary in TOPIC_WORDS.items()}
    hits["payment"] += question.count("$")
    best = max(hits.values())
    if best == 0:
        return "other"
    return next(topic for topic in TIE_ORDER if hits[topic] == best)


def auto_topic(ticket: Ticket) -> str:
    """What a vector agent's ``ask_customer`` asks about: the first topic of :data:`AUTO_ORDER` whose
    fact is hidden and not asked about yet, else ``other``."""
    asked = {FACT_OF_TOPIC.get(topic) for topic in ticket.questions}
    for topic in AUTO_ORDER:
        fact = FACT_OF_TOPIC[topic]
        if fact in ticket.facts and fact not in ticket.revealed and fact not in asked:
            return topic
    return "other"


def customer_reply(ticket: Ticket, question: str | None) -> CustomerReply:
    """The customer's reply to ``question`` (None: :func:`auto_topic`); the ticket is not changed."""
    internal = question is not None and asks_internal(question)
    topic = auto_topic(ticket) if question is None else topic_of(question)
    fact = FACT_OF_TOPIC.get(topic)
    value = ticket.facts.get(fact) if fact is not None else None
    if internal:
        text = ("I don't know -- that's something only you can see on your side, isn't it? "
                "Can't you check it in your system?")
    elif value is not None and fact is not None:  # (a value is only ever read for a fact)
        cues = _account_cue(value) if topic == "account" else _CUES[fact].get(value, ())
        # A value this module has no words for (another bank): what the customer can see of it.
        text = _wording(ticket, _pick(ticket, cues) or _UNSPECIFIC[topic])
    elif topic == "other":
        again = " This is the second time I'm writing about it." if ticket.contact else ""
        text = f"Sure -- I'm {ticket.customer}. It's about what I wrote: \"{ticket.subject}\".{again}"
    else:
        text = _wording(ticket, _NOTHING_WRONG[topic]) + f" What I need help with is what I wrote: \"{ticket.subject}\"."
    repeated = topic in ticket.questions
    if repeated:
        text = "As I already told you: " + text
    if ticket.sentiment < -0.5:
        text += " And honestly, this is taking far too long."
    informative = not internal and value is not None and fact not in ticket.revealed
    return CustomerReply(topic, text, repeated, informative)


# --- wording ----------------------------------------------------------------------------------------
def _pick(ticket: Ticket, options: tuple[str, ...]) -> str:
    return options[ticket.id % len(options)] if options else ""


def _wording(ticket: Ticket, template: str) -> str:
    """``template`` with the ticket's values filled in, as a sentence (capitalised)."""
    text = template.format_map(_slots(ticket))
    return text[:1].upper() + text[1:]


def _slots(ticket: Ticket) -> dict[str, str]:
    """The values a reply may mention, with safe fallbacks when the ticket's text has none."""
    values = ticket.slot_values
    product = values.get("product") or values.get("camera")
    amount, order_id, last4 = values.get("amount"), values.get("order_id"), values.get("last4")
    day = 1 + (ticket.id * 7) % 28
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return {
        "order": f"order #{order_id}" if order_id else "my order",
        "money": f"${amount}" if amount else "the full amount",
        "payment": f"my payment of ${amount}" if amount else "my payment",
        "card": f"my card ending in {last4}" if last4 else "my card",
        "device": f"the {product}" if product else "my device",
        "carrier": values.get("carrier") or "the courier",
        "hub": f"a depot in {values['city']}" if values.get("city") else "a depot",
        "days": values.get("days") or str(3 + ticket.id % 5),
        "day": f"{day}{suffix}",
        "phone": f"my {values['phone']}" if values.get("phone") else "my phone",
        "feature": values.get("app_feature") or "live view",
    }


_NOTHING_WRONG: Final = {
    "order": "As far as I can tell {order} is fine -- that's not why I'm writing.",
    "payment": "I haven't noticed anything odd with {payment} -- that's not the problem.",
    "device": "My devices work fine -- that's not what I'm writing about.",
    "account": "I can log in to my account without any trouble.",
}
_UNSPECIFIC: Final = {
    "order": "All I know is what the tracking for {order} shows me; I wrote everything I have.",
    "payment": "All I can see is {money} on {card}; I wrote everything I have.",
    "device": "I've told you what {device} does; I don't know anything more.",
    "account": "I can only tell you what I see when I log in; I wrote everything I have.",
}
_CUES: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "order_status": {
        "processing": (
            "I placed {order} {days} days ago and the website still says it's being prepared. "
            "Nothing has shipped and I have no tracking number.",
            "As far as I can see {order} hasn't left your warehouse: no tracking, no shipping email, "
            "just 'preparing your order'.",
        ),
        "backordered": (
            "When I look at {order} online it says the item is out of stock and will ship when it's "
            "back. Nobody told me that when I paid.",
            "I got an email saying {order} is waiting on stock. I had no idea it wasn't available.",
        ),
        "in_transit": (
            "The tracking for {order} shows it moving: {carrier} scanned it at {hub} yesterday. "
            "I just want to know when it will get here.",
            "According to {carrier}, {order} is on its way and the last scan was this morning. "
            "I'm only asking because I need it by the weekend.",
        ),
        "delayed": (
            "The tracking for {order} hasn't moved in {days} days. It's sitting at {hub} and the "
            "promised date has passed.",
            "I was supposed to get {order} last week. The tracking from {carrier} just says "
            "'exception' and it's stuck at {hub}.",
        ),
        "customs_hold": (
            "I was told by {carrier} that {order} is stuck at customs and they want me to pay import "
            "duties before they'll release it. Nobody mentioned any fees.",
            "I got a letter asking me to pay duties on {order} before it can come into the country. "
            "Is that right?",
        ),
        "delivered": (
            "The tracking for {order} says it was dropped off, and there's a photo of the box at a "
            "front door. I just want to check it went to the right place.",
            "The tracking from {carrier} shows {order} was handed over with a signature on the {day}. "
            "Somebody must have signed for it, but I haven't seen it.",
        ),
        "delivered_not_received": (
            "The tracking for {order} says it was dropped off on the {day}, but there's no photo or "
            "signature and it's not here. I asked my neighbours too.",
            "The tracking from {carrier} marks {order} as done, but I was home all day and nothing "
            "came. No photo, nobody signed anything.",
        ),
        "lost": (
            "I called {carrier} about {order} and they told me they can't find it anywhere and have "
            "stopped looking. The tracking hasn't changed in weeks.",
            "I was told by {carrier} that the parcel for {order} went missing in their network and "
            "won't turn up.",
        ),
        "damaged_in_transit": (
            "When {order} came the box was crushed and the item inside is cracked. I took photos "
            "of everything.",
            "The package for {order} arrived torn open and what was inside is broken. The driver "
            "even noted the damage.",
        ),
        "wrong_address": (
            "I just noticed {order} is going to my old address -- I moved last month. The tracking "
            "says it can't be dropped off there.",
            "I heard from {carrier} that the address on {order} is incomplete; I think I left off my "
            "apartment number. It's sitting at {hub}.",
        ),
        "returned_to_sender": (
            "The tracking for {order} now says it's going back to you. I never refused it, nobody "
            "even knocked.",
            "According to {carrier}, {order} couldn't be handed over and is heading back to your "
            "warehouse. I still want it!",
        ),
        "return_in_transit": (
            "I sent {order} back {days} days ago with the prepaid label, and the tracking shows it's "
            "on its way to you.",
            "My return for {order} is in the mail -- {carrier} scanned it when I dropped it off.",
        ),
        "return_received": (
            "The return tracking shows you signed for {order} on the {day}, but I haven't had my "
            "money back.",
            "My return for {order} reached your warehouse over a week ago according to {carrier}, "
            "and still no refund.",
        ),
    },
    "payment_status": {
        "settled": (
            "The charge for {money} went through once and it's posted on my statement. I only "
            "wanted to check the amount is right.",
            "I see a single payment of {money} on {card}, nothing else. I just wanted to be sure "
            "that's final.",
        ),
        "authorization_hold": (
            "My banking app shows a charge for {money} as pending, not posted yet. It's been there a "
            "couple of days.",
            "There's a temporary charge for {money} on {card} marked 'pending'. I never finished "
            "any purchase for it.",
        ),
        "duplicate_capture": (
            "I can see two identical charges for {money} on {card}, both on the {day}, for the same "
            "order.",
            "My statement shows {money} taken twice: same amount, same day. I only placed one order.",
        ),
        "failed_but_captured": (
            "The checkout page gave me an error and said the payment failed, but {money} was still "
            "taken from {card}.",
            "Your site said my payment didn't go through and I never got a confirmation -- yet {money} "
            "is gone from my account.",
        ),
        "billing_error": (
            "I was charged {money}, which is more than I should have paid -- the discount I was "
            "promised wasn't applied.",
            "The bill says {money}, and that's not what I agreed to: I'm paying for something I "
            "cancelled.",
        ),
        "card_declined": (
            "When I tried to pay {money}, it wouldn't accept {card}. My bank says nothing was taken.",
            "I tried to pay {money} twice and both times the payment was refused. My balance hasn't "
            "changed.",
        ),
        "refund_pending": (
            "You emailed me that a refund of {money} was sent {days} days ago, but it's not on "
            "{card} yet.",
            "I got a refund confirmation for {money} last week. My bank still shows nothing.",
        ),
        "refund_not_issued": (
            "I was promised a refund of {money} weeks ago and nothing ever came -- I never even got a "
            "refund email.",
            "Nobody has sent me the refund of {money} I'm owed. There's no confirmation anywhere in "
            "my email.",
        ),
        "over_refund_limit": (
            "I'm owed {money} back -- it's a big sum, the whole order, so please don't just send part "
            "of it.",
            "The refund I'm waiting for is {money}. I know it's a lot, but it's the full price I paid.",
        ),
        "fraud_suspected": (
            "There's a charge for {money} I don't recognise at all, and now your site blocks me when "
            "I try to order.",
            "I didn't make this purchase of {money} -- someone may have used {card}. And your site "
            "won't let me check out anymore.",
        ),
    },
    "device_state": {
        "user_error": (
            "I changed my Wi-Fi router last week and I'm not sure I set up {device} again properly. "
            "The light just blinks.",
            "Honestly, I might have changed some settings on {device} in the app, and now it doesn't "
            "work the way it did.",
        ),
        "outdated_version": (
            "I haven't updated the app on {phone} in ages, and {device} still runs the software it "
            "came with.",
            "The app keeps asking me to install an update I never got round to. Everything on "
            "{phone} is pretty old.",
        ),
        "needs_reset": (
            "I've restarted {device} and reinstalled the app, but it still says it's registered to "
            "another account and won't let me add it.",
            "Nothing I do on my end fixes it: log out, log in, unplug {device} -- it's stuck saying my "
            "account can't be verified.",
        ),
        "known_outage": (
            "It stopped working this morning all at once, and people online say theirs are down too.",
            "My neighbour's cameras stopped at the same time as {device}. It's not just me.",
        ),
        "needs_engineering": (
            "It fails the same way every time I open {feature}, even after reinstalling and "
            "restarting. It looks like a bug to me.",
            "I can make it happen every time: tap {feature} and the app crashes. Everything else "
            "works.",
        ),
        "hardware_fault": (
            "{device} won't power on at all -- no light even when it's plugged in, and it got very "
            "hot before it died.",
            "{device} makes a clicking sound and there's fog inside the lens. Turning it off and on "
            "changes nothing.",
        ),
        "account_compromised": (
            "I got emails about a password change I didn't make, and there are logins from places "
            "I've never been.",
            "Someone else seems to be in my account -- there's a phone I don't own in the device "
            "list and my settings changed.",
        ),
    },
}
# An account question about device_state: the account side of the value, else "the account is
# fine, it's the device" and the device cue.
_ACCOUNT_CUES: Final[dict[str, tuple[str, ...]]] = {
    "needs_reset": (
        "I can't get in properly: the app says my account can't be verified, even after I reset my "
        "password myself.",
    ),
    "account_compromised": _CUES["device_state"]["account_compromised"],
    "user_error": ("My login works fine, though I may have set things up under my partner's account.",),
}


def _account_cue(value: str) -> tuple[str, ...]:
    if value in _ACCOUNT_CUES:
        return _ACCOUNT_CUES[value]
    return tuple(
        "My account works, I can log in. The problem is the device itself: " + cue
        for cue in _CUES["device_state"].get(value, ())
    )


__all__ = [
    "AUTO_ORDER", "FACT_OF_TOPIC", "TOPICS", "TOPIC_WORDS", "CustomerReply", "asks_internal",
    "auto_topic", "customer_reply", "topic_of",
]
