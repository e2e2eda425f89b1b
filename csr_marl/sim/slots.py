"""Slot values: what fills a template's ``{slot}`` placeholders.

Generated slots (ids, money, dates; ``GENERATED_SLOTS``) are made up from uniform draws; every other
slot takes one of the bank's listed values. The ticket factory and the text noise both fill slots here,
each from its own random stream.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..config.tickets import GENERATED_SLOTS
from .random import UniformStream


def slot_value(slot: str, u: UniformStream, listed: Mapping[str, Sequence[str]]) -> str:
    """One value for ``slot``: generated, or drawn from the bank's ``listed`` values."""
    if slot in GENERATED_SLOTS:
        return generated_value(slot, u)
    options = listed[slot]
    return options[u.integer(len(options))]


def generated_value(slot: str, u: UniformStream) -> str:
    """A made-up value for a generated slot, written bare (the text supplies any "#" or "$")."""
    if slot == "order_id":
        return str(1000000 + u.integer(9000000))
    if slot == "amount":
        return f"{math.exp(2.3 + 3.5 * u()):.2f}"
    if slot == "tracking_id":
        return f"1Z{u.integer(10**6):06d}{u.integer(10**6):06d}"
    if slot == "invoice_id":
        return f"INV-{100000 + u.integer(900000)}"
    if slot == "last4":
        return f"{u.integer(10000):04d}"
    if slot == "days":
        return str(2 + u.integer(13))
    if slot == "ticket_ref":
        return f"CS-{100000 + u.integer(900000)}"
    raise KeyError(slot)
