"""A study's output folder: atomic file writes, the append-only replication log, and the identity check.

Every file but the replication log is written whole to a temporary file and renamed into place, so a
reader (or a killed run) never sees half a file. The log gets one complete line per finished
replication, flushed at once; a line cut short by a kill is dropped when the study resumes.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..sim.kpis import naming_file, new_file_mode
from .errors import StudyError

MANIFEST = "manifest.json"


def atomic_write(path: Path, write: Callable[[io.TextIOBase], None] | str | bytes) -> Path:
    """Write ``path`` via a temporary file in the same folder and ``os.replace`` (all or nothing).

    ``write`` is the text or bytes to store, or a function that writes to the open temporary file.
    Missing folders on the way to ``path`` are created.
    """
    path = Path(path)
    binary = isinstance(write, bytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode())  # mkstemp makes the file private; a written result is not
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) as handle:
            if callable(write):
                write(handle)
            else:
                handle.write(write)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise naming_file(error, path) from None  # a full disk's ENOSPC names no file
        raise
    return path


def write_json(path: Path, payload: Any) -> Path:
    """Write ``payload`` as indented JSON, atomically; NaN and infinities become ``null``."""
    return atomic_write(path, json.dumps(json_safe(payload), indent=2, default=_json_default) + "\n")


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write a whole CSV file atomically."""

    def write(handle: io.TextIOBase) -> None:
        writer = csv.DictWriter(handle, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)

    return atomic_write(path, write)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The study manifest in ``folder``, ``None`` if there is none."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8
        raise StudyError(f"{folder}: {MANIFEST} cannot be read ({exc}); choose another output folder") from None
    if not isinstance(manifest, dict) or "config_hash" not in manifest:
        raise StudyError(f"{folder}: {MANIFEST} is not a csr-marl study manifest; choose another output folder")
    return manifest


def claim_folder(folder: Path, kind: str, identity: Mapping[str, Any], config_hash: str) -> dict[str, Any] | None:
    """Check that ``folder`` is new, empty, or holds this very study; return its manifest when resuming.

    Raises :class:`StudyError` saying why when the folder holds another study or unrelated files.
    Nothing is written here.
    """
    if folder.exists() and not folder.is_dir():
        raise StudyError(f"{folder} is a file, not a folder")
    if not folder.exists() or not any(folder.iterdir()):
        return None
    manifest = read_manifest(folder)
    if manifest is None:
        raise StudyError(f"{folder} is not empty and holds no {MANIFEST}; choose a new or empty folder")
    if manifest.get("kind") != kind:
        raise StudyError(f"{folder} holds a {manifest.get('kind', 'different')} study, not a {kind}; choose another folder")
    if manifest["config_hash"] != config_hash:
        differs = differences(manifest.get("identity", {}), identity)
        raise StudyError(
            f"{folder} holds another study ({differs}; config hash {manifest['config_hash']} there, "
            f"{config_hash} here); use another --out or remove that folder"
        )
    return manifest


def differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """Which parts of a study's identity changed, as words (``policy: random there, heuristic here``)."""
    parts = []
    for key in sorted(set(stored) | set(current)):
        old, new = stored.get(key), current.get(key)
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            parts.append(f"{key} differs in {', '.join(changed[:4])}{' …' if len(changed) > 4 else ''}")
        elif _short(old) and _short(new):
            parts.append(f"{key}: {old} there, {new} here")
        else:
            parts.append(f"{key} differs")
    return "; ".join(parts) or "its definition differs"


def _short(value: Any) -> bool:
    return len(json.dumps(value, default=str)) <= 60


class ReplicationLog:
    """The per-replication CSV, appended one complete line per finished replication.

    Each line ends with a ``check`` column, a digest of its other cells: a resumed study refuses a
    line that was edited, duplicated with other values, outside the study, or unreadable, naming the
    file and line, instead of folding it into the summary.
    """

    CHECK = "check"

    def __init__(
        self,
        path: Path,
        columns: Sequence[str],
        key: Callable[[Mapping[str, str]], Any],
        expected: Callable[[Any], bool] | None = None,
    ) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self._key = key
        self._expected = expected

    def load(self) -> dict[Any, dict[str, str]]:
        """Rows already recorded, by key; drops a last line cut short by a kill, refuses any other damage."""
        if not self.path.is_file():
            return {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise StudyError(f"{self.path}: not UTF-8 text (byte {exc.start}); the file was damaged") from None
        complete, _, partial = text.rpartition("\n")
        lines = list(csv.reader(io.StringIO(complete + "\n"))) if complete else []
        if not lines and not partial:
            return {}
        header = lines[0] if lines else next(csv.reader(io.StringIO(partial)), [])
        if header != [*self.columns, self.CHECK]:
            raise StudyError(
                f"{self.path}, line 1: other columns than this version of csr-marl writes; use another output folder"
            )
        rows: dict[Any, dict[str, str]] = {}
        first_line: dict[Any, int] = {}
        for number, cells in enumerate(lines[1:], start=2):
            where = f"{self.path}, line {number}"
            if len(cells) != len(header):
                raise StudyError(f"{where}: {len(cells)} cells, expected {len(header)}; the file was damaged")
            row = dict(zip(self.columns, cells))
            if cells[-1] != _digest(cells[:-1]):
                raise StudyError(f"{where}: the line was changed after it was written (its check does not match)")
            try:
                key = self._key(row)
            except ValueError as exc:
                raise StudyError(f"{where}: unreadable key: {exc}") from None
            if self._expected is not None and not self._expected(key):
                raise StudyError(f"{where}: replication {key} is not part of this study")
            if key in rows:
                if rows[key] != row:
                    raise StudyError(
                        f"{where}: replication {key} is recorded again with other values (first on line {first_line[key]})"
                    )
                continue
            rows[key] = row
            first_line[key] = number
        if partial:  # a line cut short by a kill: keep the complete ones
            write_csv(self.path, [*self.columns, self.CHECK], [self._checked(r) for r in rows.values()])
        return rows

    def rewrite(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Replace the file with ``rows`` (e.g. sorted), atomically, each with its check."""
        write_csv(self.path, [*self.columns, self.CHECK], [self._checked(row) for row in rows])

    def append(self, row: Mapping[str, Any]) -> None:
        """Add one row as one write, then flush it to the OS (a kill after this keeps it)."""
        new = not self.path.is_file()
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=[*self.columns, self.CHECK], lineterminator="\n", extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(self._checked(row))
        try:
            with open(self.path, "a", encoding="utf-8", newline="") as handle:
                handle.write(buffer.getvalue())
                handle.flush()
        except OSError as error:
            raise naming_file(error, self.path) from None

    def _checked(self, row: Mapping[str, Any]) -> dict[str, str]:
        cells = [str(row[column]) for column in self.columns]
        return {**dict(zip(self.columns, cells)), self.CHECK: _digest(cells)}


def _digest(cells: Sequence[str]) -> str:
    return hashlib.sha256("\x1f".join(cells).encode("utf-8")).hexdigest()[:16]
