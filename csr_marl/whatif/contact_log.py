"""Reading a contact log for calibration, within stated limits (see :mod:`csr_marl.whatif.calibrate`).

One row per contact: ``arrival``, ``answered`` (empty when never answered), ``end`` and ``abandoned``
(1/0, true/false), optionally ``day``, ``queue``, ``category`` and ``tier``. Times are minutes from the
start of the day, or ISO date-times. ISO times that carry a UTC offset (``2024-05-01T09:03:12Z``,
``+02:00``) are converted to UTC, and their day is the UTC date; times without an offset are taken as
they are. A log that mixes times with and without an offset is refused: its zones cannot be told apart.
With date-times, every day counts from one opening: the stated ``opens_at`` (``HH:MM``), or else the
most common opening across the log's days (each day's is the start of its first arrival's interval;
among equally common ones, the latest). So one early contact on one day moves nothing: a contact that
arrives before the opening counts in the first interval (its times shift to arrive at the opening, its
wait and handle time kept; ``early`` says by how much).

Every problem is one :class:`~csr_marl.whatif.errors.StudyError` naming the file and line:

* the file must be UTF-8 text (a byte-order mark, as spreadsheets write it, is allowed);
* at most :data:`MAX_CONTACTS` rows, each field at most the csv module's limit;
* text fields (day, queue, category, tier) at most :data:`MAX_TEXT_CHARS` characters, no control or
  format characters (they would reach the scenario YAML and the terminal);
* times within :data:`MAX_MINUTE` minutes of the start of the day.
"""

from __future__ import annotations

from collections import Counter

import math
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..config.scenario import clock_minutes, clock_time
from .csv_rows import csv_rows
from .errors import StudyError

REQUIRED = ("arrival", "answered", "end", "abandoned")
OPTIONAL_TEXT = ("day", "queue", "category", "tier")
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}
#: The most contacts (rows) one log may hold.
MAX_CONTACTS = 1_000_000
#: The longest text a day, queue, category or tier may have.
MAX_TEXT_CHARS = 100
#: The latest minute of the day a time may fall on: a week (also the longest ``--horizon``).
MAX_MINUTE = 7 * 24 * 60


@dataclass(frozen=True)
class Contact:
    day: str
    arrival: float
    answered: float | None
    end: float
    abandoned: bool
    queue: str
    category: str | None
    tier: str | None
    day_start: float = 0.0  # clock minute (after midnight) of this day's minute 0
    early: float = 0.0  # minutes it arrived before the opening (its times shifted to the opening)


def read_contact_log(path: str | Path, interval_minutes: int = 30, opens_at: str | None = None) -> list[Contact]:
    """Read and check a contact log; :class:`StudyError` names the file and the first bad line.
    Date-times count from one opening (``opens_at``, or the most common day's opening; see the module docstring
    ``interval_minutes`` interval)."""
    file = Path(path)
    if not file.is_file():
        raise StudyError(f"{file}: file not found")
    need = f"need {', '.join(REQUIRED)}; optional {', '.join(OPTIONAL_TEXT)}"
    rows = list(csv_rows(file, file.name, REQUIRED, need, MAX_CONTACTS))
    if not rows:
        raise StudyError(f"{file.name}: no contacts")
    clock = _Clock(_is_timestamp(rows[0][1]["arrival"]))
    contacts = [_contact(row, f"{file.name} line {line}", clock) for line, row in rows]
    if clock.stamped:
        contacts = _from_the_opening(contacts, interval_minutes, opens_at, file.name)
    return contacts


def _from_the_opening(contacts: list[Contact], width: int, opens_at: str | None, name: str) -> list[Contact]:
    """Minutes after midnight -> minutes from the opening (see the module docstring)."""
    stated = None if opens_at is None else clock_minutes(opens_at)
    firsts: dict[str, float] = {}
    for c in contacts:  # one pass: linear in the contacts, however many days
        if c.day not in firsts or c.arrival < firsts[c.day]:
            firsts[c.day] = c.arrival
    for day, first in firsts.items():
        if stated is not None and first < stated:
            raise StudyError(f"{name}: a contact on {printable(day)} arrives at {clock_time(first)}, before the opening time {opens_at}")
    if stated is not None:
        opening = float(stated)
    else:
        tally = Counter(width * math.floor(first / width) for first in firsts.values())
        opening = float(max(tally, key=lambda start: (tally[start], start)))
    out = []
    for c in contacts:
        early = max(opening - c.arrival, 0.0)
        start = opening - early  # an early contact's times shift to arrive at the opening
        out.append(Contact(c.day, c.arrival - start, None if c.answered is None else c.answered - start,
                           c.end - start, c.abandoned, c.queue, c.category, c.tier, opening, early))
    return out


class _Clock:
    """Turns a log's times into minutes: plain minutes, or ISO date-times in one zone convention."""

    def __init__(self, stamped: bool) -> None:
        self.stamped = stamped
        self.aware: bool | None = None  # whether the log's ISO times carry an offset (from its first)

    def minute(self, text: str, where: str, column: str, day: str | None = None) -> tuple[str, float]:
        """``(day, minute of that day)`` of one time; ``day`` is the arrival's, for answered and end."""
        text = (text or "").strip()
        if self.stamped:
            moment = self._moment(text, where, column)
            base = datetime.fromisoformat(day) if day else moment.replace(hour=0, minute=0, second=0, microsecond=0)
            value = (moment - base).total_seconds() / 60.0
            day = moment.date().isoformat() if day is None else day
        else:
            try:
                value = float(text)
            except ValueError:
                raise StudyError(f"{where}: {column} {_shown(text)} is not a minute or an ISO date-time") from None
            if not math.isfinite(value) or value < 0:
                raise StudyError(f"{where}: {column} must be a minute >= 0, got {_shown(text)}")
        if value > MAX_MINUTE:
            raise StudyError(f"{where}: {column} {_shown(text)} is {value:.6g} minutes into the day, past the "
                             f"{MAX_MINUTE:,} (a week) calibrate handles")
        return day or "0", value

    def _moment(self, text: str, where: str, column: str) -> datetime:
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        except ValueError:
            raise StudyError(f"{where}: {column} {_shown(text)} is not a minute or an ISO date-time") from None
        aware = moment.utcoffset() is not None
        if self.aware is None:
            self.aware = aware
        elif aware != self.aware:
            said = "has a UTC offset and the first row's times have none" if aware else "has no UTC offset and the first row's times have one"
            raise StudyError(f"{where}: {column} {_shown(text)} {said}: give every time with an offset, or none")
        return moment.astimezone(timezone.utc).replace(tzinfo=None) if aware else moment


def _contact(row: dict[str, str], where: str, clock: _Clock) -> Contact:
    text = {column: _text(row.get(column), where, column) for column in OPTIONAL_TEXT}
    day, arrival = clock.minute(row["arrival"], where, "arrival")
    answered = None if not (row["answered"] or "").strip() else clock.minute(row["answered"], where, "answered", day if clock.stamped else None)[1]
    _, end = clock.minute(row["end"], where, "end", day if clock.stamped else None)
    flag = (row["abandoned"] or "").strip().lower()
    if flag not in _TRUE | _FALSE:
        raise StudyError(f"{where}: abandoned must be 1/0 or true/false, got {_shown(row['abandoned'] or '')}")
    abandoned = flag in _TRUE
    if abandoned and answered is not None:
        raise StudyError(f"{where}: a contact cannot be answered and abandoned")
    if end < arrival or (answered is not None and not arrival <= answered <= end):
        raise StudyError(f"{where}: times must satisfy arrival <= answered <= end")
    return Contact(text["day"] or day, arrival, answered, end, abandoned, text["queue"] or "resolver",
                   text["category"], text["tier"])


def _text(value: str | None, where: str, column: str) -> str | None:
    """A text field stripped, or None when empty; refused when too long or holding control characters."""
    value = (value or "").strip()
    if len(value) > MAX_TEXT_CHARS:
        raise StudyError(f"{where}: {column} has {len(value):,} characters, more than the {MAX_TEXT_CHARS} allowed")
    if any(unicodedata.category(ch)[0] == "C" for ch in value):
        raise StudyError(f"{where}: {column} {_shown(value)} holds a control character (a line break, a tab, an escape code)")
    return value or None


def printable(text: str) -> str:
    """``text`` with every control or format character (a line break, an escape code) escaped, for a
    YAML comment or a terminal line."""
    return "".join(ascii(ch)[1:-1] if unicodedata.category(ch)[0] == "C" else ch for ch in text)


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error line: control characters escaped, cut to ``limit`` characters."""
    return repr(printable(text[:limit])) + ("..." if len(text) > limit else "")


def _is_timestamp(text: str | None) -> bool:
    try:
        float(text or "")
        return False
    except ValueError:
        return True
