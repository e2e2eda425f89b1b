"""The reply rubric's vocabulary and the documented reply's wording (see :mod:`.responses`).

Everything here is keyed by tool and by revealed fact value -- the same keys as the ticket bank's
playbook -- never by template, so the rubric reads any ticket of any bank the same way. Patterns are
regex fragments matched case-insensitively at a word start (``refund`` also matches ``refunded``).

* :data:`ACTION_WORDS` -- what states that a work tool's action was taken (credits the resolution);
  ``update_shipping`` says different things depending on the revealed ``order_status`` / ``device_state``.
* :data:`FINDING_WORDS` -- what explains a revealed value that calls for no action (the resolution
  is the explanation: a pending hold, a known outage, settings instructions).
* :data:`CLAIMS` -- what a reply may only say when a tool was used: a refund made or started, a
  replacement or reshipment, an account reset, an engineering fix, a fraud, recovery or legal review.
* :data:`FINDINGS` / :data:`ACTIONS` -- the documented reply's sentences, in the playbook's words.
"""

from __future__ import annotations

import re

# --- what credits the resolution --------------------------------------------------------------------
ACTION_WORDS: dict[str, tuple[str, ...]] = {
    "initiate_refund": ("refund", "credited", "reimburs", "money back", "revers"),
    "approve_refund": ("approv", "signed off"),
    "reset_account": ("reset",),
    "engineering_fix": ("engineer", "fix", "patch"),
    "fraud_review": ("fraud", "security review", "risk review", "secured"),
    "account_recovery": ("recover", "secured", "restored"),
    "legal_review": ("legal",),
}
# update_shipping, by the value that called for it (fact values of order_status or device_state).
SHIPPING_WORDS: dict[str, tuple[str, ...]] = {
    "delayed": ("trace", "expedit", "new delivery estimate", "new eta"),
    "delivered_not_received": ("reship", "re-ship", "resen", "replacement", "claim"),
    "damaged_in_transit": ("replacement", "reship", "re-ship", "new unit"),
    "wrong_address": ("redirect", "re-?rout", "corrected address", "address (?:is |was |has been )?updated"),
    "returned_to_sender": ("reship", "re-ship", "resen", "ship(?:ped|ping)? (?:it )?again"),
    "in_transit": ("reschedul", "redirect", "updated the delivery", "new delivery date"),
    "delivered": ("replacement", "reship", "re-ship", "missing item", "correct item"),
    "hardware_fault": ("replacement", "warranty", "new unit"),
}
SHIPPING_ANY: tuple[str, ...] = tuple(dict.fromkeys(w for ws in SHIPPING_WORDS.values() for w in ws))

FINDING_WORDS: dict[str, tuple[str, ...]] = {
    "processing": ("processing", "not (?:yet )?shipped", "dispatch", "warehouse"),
    "backordered": ("backorder", "back order", "back-order", "stock", "restock"),
    "in_transit": ("in transit", "on its way", "on the way", "tracking", "moving"),
    "customs_hold": ("customs", "dut(?:y|ies)", "import"),
    "delivered": ("delivered", "proof of delivery", "delivery photo", "signature"),
    "return_in_transit": ("return",),
    "settled": ("correct", "settled", "final", "went through", "valid"),
    "authorization_hold": ("hold", "pending", "authori[sz]ation", "drops? off", "releas"),
    "card_declined": ("declin", "issuer"),
    "refund_pending": ("on its way", "pending", "already issued", "through your bank"),
    "user_error": ("instruction", "steps?\\b", "setting", "walk", "guide", "how to"),
    "outdated_version": ("updat", "latest version", "firmware", "upgrad"),
    "known_outage": ("outage", "status page", "incident"),
}

# What explains a revealed value that calls for an action: a reply states the finding beside the action
# (only the lookup reveals it). Not used to detect false findings: these words are too common for that.
ACTION_FINDING_WORDS: dict[str, tuple[str, ...]] = {
    "delayed": ("delay", "late", "stuck", "held up", "hub", "past (?:its|the) (?:promised|expected)"),
    "delivered_not_received": ("no proof", "scanned", "marked (?:as )?delivered", "shows? (?:as )?delivered"),
    "lost": ("lost", "missing"),
    "damaged_in_transit": ("damag", "broken"),
    "wrong_address": ("address",),
    "returned_to_sender": ("back to (?:us|our|the)", "returned to (?:us|sender|our)", "way back"),
    "return_received": ("arrived", "received", "got your return"),
    "duplicate_capture": ("twice", "duplicate", "double", "two (?:identical )?(?:charges|payments|transactions)"),
    "failed_but_captured": ("captured", "taken", "went through", "was charged", "were charged"),
    "billing_error": ("more than", "overcharg", "too much", "wrong amount", "difference"),
    "refund_not_issued": ("not (?:been |yet )?issued", "never issued", "was not (?:sent|processed)", "still owe", "are owed"),
    "over_refund_limit": ("above", "limit", "specialist", "sign(?:ed)? off"),
    "fraud_suspected": ("flag", "misuse", "risk", "suspicious", "unauthori"),
    "needs_reset": ("out of sync", "registration", "reset"),
    "needs_engineering": ("defect", "bug", "engineer"),
    "hardware_fault": ("fault", "defective", "warranty"),
    "account_compromised": ("someone else", "compromis", "unauthori", "takeover", "signed in"),
}
APOLOGY_WORDS: tuple[str, ...] = ("sorry", "apolog", "regret")
COURTESY_WORDS: tuple[str, ...] = (
    "thank", "please", "appreciat", "glad", "happy to help", "regards", "sincerely", "you're welcome",
)
BLAME_PHRASES: tuple[str, ...] = (
    "your fault", "your own fault", "you should have", "you shouldn't have", "you should not have",
    "you failed to", "your mistake", "your own mistake", "you forgot to", "you were supposed to",
    "user error", "you didn't read", "you did not read", "you clearly", "obviously you",
    "that's on you", "that is on you", "not our fault", "not our problem", "you caused",
    "learn to", "as i already said", "as i said before", "read the manual",
)

# --- what only a tool's use allows a reply to say -----------------------------------------------------
REFUND_TOOLS: frozenset[str] = frozenset({"initiate_refund", "approve_refund"})
_REFUND_DONE = r"\b(?:refunded|reimbursed|credited (?:back|to)|money back|revers(?:ed|al))\b"
_REFUND_ACT = (  # "|" joins the clauses a reply is read in: a claim stays inside one
    r"\brefund\b[^|]*\b(?:issued|initiated|processed|started|sent|on its way|approved|completed?|"
    r"arranged|put through)\b|\b(?:will|we'll|i'll|going to|have|i've|we've)\s+(?:\w+\s+)?refund\b|"
    r"\b(?:get|receive|issue|give|send)\w*\s+(?:you\s+)?(?:a|the|your)\s+(?:full\s+|partial\s+)?refund\b"
)
# (tools that allow it, substrings any claim contains, pattern): a clause matching the pattern claims
# the tools' action. The substrings are a cheap first test before the pattern.
CLAIMS: dict[str, tuple[frozenset[str], tuple[str, ...], re.Pattern[str]]] = {
    "refund": (
        REFUND_TOOLS, ("refund", "reimburs", "credited", "money back", "revers"),
        re.compile(f"{_REFUND_DONE}|{_REFUND_ACT}"),
    ),
    "replacement": (
        frozenset({"update_shipping"}),
        ("replacement", "reship", "re-ship", "resen", "redirect", "rout", "expedit", "new unit", "trace"),
        re.compile(
            r"\b(?:replacement|reship\w*|re-ship\w*|resen[dt]\w*|redirect\w*|re-?rout\w*|"
            r"expedit\w*|new unit|carrier trace|opened a trace)\b"
        ),
    ),
    "reset": (
        frozenset({"reset_account"}), ("reset",),
        re.compile(r"\breset\b[^|]{0,30}\b(?:account|registration|login)\b|"
                   r"\b(?:account|registration|login)\b[^|]{0,30}\breset\b"),
    ),
    "engineering fix": (
        frozenset({"engineering_fix"}), ("engineer", "fix", "patch"),
        re.compile(r"\bengineer\w*\b[^|]*\b(?:fix\w*|patch\w*|deploy\w*|repair\w*|resolved)\b|"
                   r"\b(?:fix|patch)\s+(?:has been|was|is)\s+(?:deployed|released|applied)\b|"
                   r"\b(?:deployed|released|applied) a (?:fix|patch)\b"),
    ),
    "fraud review": (
        frozenset({"fraud_review"}), ("fraud", "security", "risk"),
        re.compile(r"\b(?:fraud|security|risk)\s+(?:team|review\w*|specialists?|department)\b"),
    ),
    "account recovery": (
        frozenset({"account_recovery"}), ("recovered", "secured", "restored"),
        re.compile(r"\b(?:recovered|secured|restored)\b[^|]{0,40}\b(?:account|access)\b|"
                   r"\b(?:account|access)\b[^|]{0,40}\b(?:recovered|secured|restored)\b"),
    ),
    "legal review": (
        frozenset({"legal_review"}), ("legal",),
        re.compile(r"\blegal\s+(?:team|review\w*|department|counsel)\b"),
    ),
}
# A revealed value that allows a claim without the tool: the refund was already issued before.
CLAIM_ALLOWED_BY: dict[str, tuple[str, str]] = {"refund": ("payment_status", "refund_pending")}

# --- the documented reply's sentences -----------------------------------------------------------------
FINDINGS: dict[str, str] = {
    # order_status
    "processing": "Your order is still processing in our warehouse and is inside the normal dispatch window.",
    "backordered": "The item is on backorder while we wait for new stock.",
    "in_transit": "Your parcel is in transit and moving normally with the carrier.",
    "delayed": "Your parcel is delayed at a carrier hub and is past its promised date.",
    "customs_hold": "Your parcel is held by customs until the import duties are paid.",
    "delivered": "The carrier shows the parcel as delivered, with proof of delivery.",
    "delivered_not_received": "The carrier scanned the parcel as delivered but has no proof of delivery.",
    "lost": "The carrier has declared the parcel lost.",
    "damaged_in_transit": "The carrier recorded damage to the parcel on its way to you.",
    "wrong_address": "The delivery address on the parcel is incomplete.",
    "returned_to_sender": "The parcel is on its way back to our warehouse.",
    "return_in_transit": "Your return is on its way to our warehouse.",
    "return_received": "Your return has arrived at our warehouse.",
    # payment_status
    "settled": "The charge is correct and final: the payment went through as expected.",
    "authorization_hold": "The extra amount is only a pending authorization hold that drops off by itself.",
    "duplicate_capture": "The same order was captured twice by mistake.",
    "failed_but_captured": "The checkout failed but the payment was captured anyway.",
    "billing_error": "You were charged more than you owed.",
    "card_declined": "Your card issuer declined the payment, so nothing was taken.",
    "refund_pending": "Your refund was already issued and is on its way through your bank.",
    "refund_not_issued": "The refund you are owed had not been issued.",
    "over_refund_limit": "The amount is above what I can approve on my own.",
    "fraud_suspected": "Our risk checks flagged the payment as possible card misuse.",
    # device_state
    "user_error": "Your device is fine: it needs a settings change, and the steps in our guide walk you through it.",
    "outdated_version": "Your app or firmware is out of date: updating to the latest version solves this.",
    "needs_reset": "Your device registration is out of sync with our back office.",
    "known_outage": "This is part of a known outage that we track on our status page.",
    "needs_engineering": "This is a new defect that needs our engineering team.",
    "hardware_fault": "The unit itself is faulty and is covered by the warranty.",
    "account_compromised": "There are signs that someone else signed in to your account.",
}
ACTIONS: dict[str, str] = {
    "initiate_refund": "I have refunded {money} to your original payment method.",
    "approve_refund": "Our billing specialists approved the refund.",
    "reset_account": "I have reset your account on our side.",
    "engineering_fix": "Our engineers have applied a fix for the defect.",
    "fraud_review": "Our fraud team reviewed the payment and secured your card.",
    "account_recovery": "Our recovery team secured your account and restored your access.",
    "legal_review": "Our legal team has reviewed your request.",
    "update_shipping": "I have updated the shipment with the carrier.",
}
SHIPPING_ACTIONS: dict[str, str] = {
    "delayed": "I opened a carrier trace and expedited the shipment, so you get a new delivery estimate.",
    "delivered_not_received": "I filed a claim with the carrier and reshipped your order.",
    "damaged_in_transit": "I have shipped a replacement, and the carrier claim is on us.",
    "wrong_address": "I asked the carrier to redirect the parcel to your corrected address.",
    "returned_to_sender": "I have reshipped the order to your confirmed address.",
    "in_transit": "I have rescheduled the delivery with the carrier as you asked.",
    "delivered": "I have shipped the missing item as a replacement.",
    "hardware_fault": "I have arranged a warranty replacement unit for you.",
}
ID_LABELS: dict[str, str] = {
    "order_id": "order #{}", "invoice_id": "invoice {}", "tracking_id": "shipment {}", "ticket_ref": "case {}",
}
