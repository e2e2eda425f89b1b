"""What a lookup shows beside a finding: ticket-specific values only reading can give a reply.

A lookup (``check_order``, ``check_payment``, ``check_device``) reveals a fact value -- the finding,
``duplicate_capture`` -- and, where the ticket bank writes a *detail* for that value, the record behind
it: the two capture dates and their transaction numbers, the date and place of the last carrier scan,
the firmware version, the case number the desk opened. The bank's ``details`` section writes each
detail as a sentence with placeholders (:data:`PLACEHOLDERS`); the values are drawn per ticket from a
hash of the episode's seed, the ticket and the fact, so no random stream moves and the same customer
coming back sees the same record.

The reply rubric (:mod:`.responses`) credits a finding in full only with one of its *values*
(:attr:`Detail.values`: the dates, numbers and versions; a place is shown but never enough, there are
too few of them to be news), and counts dates and record numbers that no lookup showed as guesses.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final

from ..config.tickets import DETAIL_PLACEHOLDERS, details_of
from .tickets import Ticket

PLACEHOLDERS: Final = DETAIL_PLACEHOLDERS
MONTHS: Final[tuple[str, ...]] = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
)
HUBS: Final[tuple[str, ...]] = (
    "Memphis", "Louisville", "Indianapolis", "Ontario", "Dallas", "Newark", "Atlanta", "Reno", "Phoenix",
    "Chicago", "Allentown", "Salt Lake City",
)
#: The placeholders whose values credit a finding (a hub names one of a dozen places: not news).
CREDITED: Final[frozenset[str]] = frozenset({"date", "date2", "ref", "ref2", "version"})


@dataclass(frozen=True)
class Detail:
    """The record behind one revealed finding: its sentence and the values a reply must give."""

    text: str
    values: tuple[tuple[str, str], ...]  # (placeholder, value) for each credited placeholder used


def reveal_detail(ticket: Ticket, fact: str, salt: object) -> Detail | None:
    """The detail of ``ticket``'s hidden ``fact`` as its lookup shows it (None: the bank writes none);
    ``salt``: the episode's seed (its root entropy)."""
    value = ticket.facts.get(fact)
    if value is None:
        return None
    sentence = details_of(ticket.template).get(value)
    if sentence is None:
        return None
    drawn = _draw(f"{salt}|{ticket.id}|{ticket.template.id}|{fact}|{value}")
    used = set(re.findall(r"\{(\w+)\}", sentence))
    return Detail(
        sentence.format_map(drawn),
        tuple((name, drawn[name]) for name in sorted(used & CREDITED)),
    )


def _draw(key: str) -> dict[str, str]:
    """Every placeholder's value, from the bytes of a hash of ``key``."""
    n = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=16).digest(), "big")
    parts = []
    for size in (12, 25, 3, 900000, 900000, 3, 30, 10, len(HUBS)):
        n, part = divmod(n, size)
        parts.append(part)
    month, day, gap, ref, ref2, major, minor, patch, hub = parts
    day, gap = day + 1, gap + 1
    return {
        "date": f"{MONTHS[month]} {day}",
        "date2": f"{MONTHS[month]} {day + gap}",
        "ref": f"{100000 + ref}",
        "ref2": f"{100000 + ref2}",
        "version": f"{4 + major}.{minor}.{patch}",
        "hub": HUBS[hub],
    }


# --- reading values in a reply -----------------------------------------------------------------------
_MONTH_OF = {name.lower(): i for i, name in enumerate(MONTHS)} | {
    name[:3].lower(): i for i, name in enumerate(MONTHS)
} | {"sept": 8}
_MONTH = "|".join(sorted(_MONTH_OF, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b(?P<m1>{_MONTH})\.?\s+(?P<d1>\d{{1,2}}){_ORDINAL}\b|"
    rf"\b(?P<d2>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<m2>{_MONTH})\b|"
    r"\b(?:\d{4}-(?P<m3>\d{1,2})-|(?P<m4>\d{1,2})/)(?P<d3>\d{1,2})\b(?![/.-]\d)"
)
_RECORD = re.compile(r"(?<![\d.,$])\d{6}(?![\d.,]\d)")
_VERSION = re.compile(r"\b\d+\.\d+\.\d+\b")


def dates_in(low: str) -> set[tuple[int, int]]:
    """The (month, day) of every date written in ``low`` (lower case): "March 14", "Mar 14th", "14
    March", "3/14", "2026-03-14" (never "3-5 days")."""
    found = set()
    for match in _DATE.finditer(low):
        if match.group("m1"):
            month, day = _MONTH_OF[match.group("m1")], int(match.group("d1"))
        elif match.group("m2"):
            month, day = _MONTH_OF[match.group("m2")], int(match.group("d2"))
        else:  # "2026-06-22" or "6/22" ("3-5 days" is no date)
            month, day = int(match.group("m3") or match.group("m4")) - 1, int(match.group("d3"))
        if 0 <= month < 12 and 1 <= day <= 31:
            found.add((month, day))
    return found


def date_key(value: str) -> tuple[int, int]:
    """The (month, day) of a detail's date ("March 14")."""
    month, day = value.split()
    return MONTHS.index(month), int(day)


def records_in(low: str) -> set[str]:
    """Six-digit record numbers written in ``low`` (not part of a longer number or an amount)."""
    return set(_RECORD.findall(low))


def versions_in(low: str) -> set[str]:
    """Version numbers (``4.12.7``) written in ``low``."""
    return set(_VERSION.findall(low))


def states_value(detail: Detail, low: str, dates: set[tuple[int, int]] | None = None) -> bool:
    """Whether ``low`` (a reply, lower case) gives one of ``detail``'s credited values."""
    for name, value in detail.values:
        if name in ("date", "date2"):
            if date_key(value) in (dates_in(low) if dates is None else dates):
                return True
        elif name == "version":
            if value in versions_in(low):
                return True
        elif value in records_in(low):
            return True
    return False


__all__ = ["CREDITED", "Detail", "HUBS", "MONTHS", "PLACEHOLDERS", "date_key", "dates_in", "records_in",
           "reveal_detail", "states_value", "versions_in"]
