"""A study's output folder: atomic file writes, the append-only replication log, and the identity check.

Every file but the replication log is written whole to a temporary file and renamed into place, so a
reader (or a killed run) never sees half a file. The log gets one complete line per finished
replication, flushed at once; a line cut short by a kill is dropped when the study resumes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .errors import StudyError

MANIFEST = "manifest.json"


def atomic_write(path: Path, write: Callable[[io.TextIOBase], None] | str | bytes) -> Path:
    """Write ``path`` via a temporary file in the same folder and ``os.replace`` (all or nothing).

    ``write`` is the text or bytes to store, or a function that writes to the open temporary file.
    """
    path = Path(path)
    binary = isinstance(write, bytes)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) as handle:
            if callable(write):
                write(handle)
            else:
                handle.write(write)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
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
    except (OSError, json.JSONDecodeError) as exc:
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
    """The per-replication CSV, appended one complete line per finished replication."""

    def __init__(self, path: Path, columns: Sequence[str], key: Callable[[Mapping[str, str]], Any]) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self._key = key

    def load(self) -> dict[Any, dict[str, str]]:
        """Rows already recorded, by key; repairs a last line cut short by a kill."""
        if not self.path.is_file():
            return {}
        text = self.path.read_text(encoding="utf-8")
        complete, _, partial = text.rpartition("\n")
        rows = list(csv.DictReader(io.StringIO(complete + "\n"))) if complete else []
        header = next(csv.reader(io.StringIO(text)), [])
        if header and header != self.columns:
            raise StudyError(
                f"{self.path} has other columns than this version of csr-marl writes; use another output folder"
            )
        width = len(self.columns)
        good = [row for row in rows if None not in row and len(row) == width and None not in row.values()]
        if partial or len(good) != len(rows) or not complete:
            write_csv(self.path, self.columns, good)
        return {self._key(row): row for row in good}

    def append(self, row: Mapping[str, Any]) -> None:
        """Add one row as one write, then flush it to the OS (a kill after this keeps it)."""
        new = not self.path.is_file()
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=self.columns, lineterminator="\n", extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)
        with open(self.path, "a", encoding="utf-8", newline="") as handle:
            handle.write(buffer.getvalue())
            handle.flush()
