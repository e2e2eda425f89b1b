"""Rows of a user's CSV file, read within bounds: every problem one :class:`StudyError` naming the file
and line (not UTF-8, a field over the csv module's limit, a missing column, too many rows)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, Sequence

from .errors import StudyError


def csv_rows(file: Path, label: str, required: Sequence[str], need: str, max_rows: int) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` of each row of ``file`` (UTF-8, a byte-order mark allowed); ``label`` starts each
    error, ``need`` says which columns it should have."""
    line = 2
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise StudyError(f"{label}: no column {', '.join(missing)} ({need})")
            line = reader.line_num + 1  # where the next row starts (a quoted field may span lines)
            for count, row in enumerate(reader, start=1):
                if count > max_rows:
                    raise StudyError(f"{label}: more than {max_rows:,} rows, the most one file may hold")
                yield line, row
                line = reader.line_num + 1
    except UnicodeDecodeError as exc:
        raise StudyError(f"{label}: not UTF-8 text (byte {exc.start} of a block read near line {line})") from None
    except csv.Error as exc:
        raise StudyError(f"{label} line {line}: {exc}") from None
