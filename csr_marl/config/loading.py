"""Reading scenarios and ticket banks from YAML, with dotted-path overrides and clear errors."""

from __future__ import annotations

import copy
import csv
import difflib
import math
import os
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from pydantic import ValidationError

from .distributions import Deterministic, Empirical, Exponential, Gamma, Lognormal
from .scenario import Scenario
from .tickets import TicketBank

#: The distribution families by their ``dist`` tag (pydantic puts the tag in an error's location).
_DIST_MODELS: dict[str, Any] = {
    "exponential": Exponential, "lognormal": Lognormal, "gamma": Gamma, "deterministic": Deterministic,
    "empirical": Empirical,
}
_DIST_TAGS = set(_DIST_MODELS)


_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser when libyaml is there

#: How deeply YAML may nest (a scenario needs about six levels; the parser's own recursion, in C or
#: Python, must never be what stops a file).
MAX_YAML_DEPTH = 64
#: How many aliases (``*name``) YAML may use: a few are handy, thousands are an expansion bomb.
MAX_YAML_ALIASES = 1_000
#: The largest scenario or ticket bank file read (the shipped bank is under 0.1 MB).
MAX_YAML_BYTES = 10 * 2**20


class ScenarioError(ValueError):
    """A scenario, override or ticket bank is malformed; the message names the field and value."""


def scenarios_dir() -> Path:
    """Where named scenarios live: ``$CSR_MARL_SCENARIOS``; else the copy an installed wheel carries
    (``csr_marl/_scenarios``); else the checkout's ``scenarios/`` folder (an editable install)."""
    env = os.environ.get("CSR_MARL_SCENARIOS")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_scenarios"
    return shipped if shipped.is_dir() else package.parent / "scenarios"


def scenario_names() -> list[str]:
    """Names accepted by :func:`load_scenario`, e.g. ``standard_day`` or ``validation/mmc``."""
    root = scenarios_dir()
    names = []
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root)
        if rel.parts[0] == "tickets":
            continue
        names.append(rel.with_suffix("").as_posix())
    return names


MAX_NAME_CHARS = 1_024  # the longest scenario name or path looked up; longer ones are refused unread


def _find(name_or_path: str | os.PathLike[str]) -> Path:
    """The scenario file a name or path means; any name that is none (too long, a NUL byte, a path the
    system cannot look up) is a :class:`ScenarioError`, never an ``OSError``."""
    text = os.fspath(name_or_path)
    shown = text if len(text) <= 80 else f"{text[:79]}…"
    if not isinstance(text, str) or len(text) > MAX_NAME_CHARS:
        raise ScenarioError(f"unknown scenario {shown!r}: a scenario name or path has at most {MAX_NAME_CHARS} characters")
    try:
        found = _lookup(Path(text))
    except (OSError, ValueError, RecursionError) as exc:  # a part too long for the file system, a NUL byte, ...
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a name the file system can look up"
        raise ScenarioError(f"unknown scenario {shown!r}: {reason}") from None
    if found is not None:
        return found
    if Path(text).suffix in (".yaml", ".yml"):
        raise ScenarioError(f"scenario file not found: {shown}")
    known = scenario_names()
    close = difflib.get_close_matches(text, known, n=1, cutoff=0.6) if len(text) <= 80 else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ScenarioError(f"unknown scenario {shown!r}{hint}; known: {', '.join(known)}")


def _lookup(path: Path) -> Path | None:
    if path.suffix in (".yaml", ".yml"):
        return path if path.is_file() else None
    root = scenarios_dir()
    for candidate in (root / f"{path}.yaml", *sorted(root.glob(f"*/{path}.yaml"))):
        if candidate.is_file() and candidate.relative_to(root).parts[0] != "tickets":
            return candidate
    return None


def _scenario_yaml(path: Path) -> Any:
    """A scenario file's YAML, parsed once per version of the file (a server resets the same few all day)."""
    try:
        stat = path.stat()
    except OSError:
        return read_yaml_file(path, "scenario")  # its one-line error
    return copy.deepcopy(_parsed_yaml(str(path.resolve()), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=64)
def _parsed_yaml(path: str, mtime_ns: int, size: int) -> Any:
    del mtime_ns, size  # part of the cache key: a file that changes is read again
    return read_yaml_file(Path(path), "scenario")


def read_yaml_file(path: Path, what: str) -> Any:
    """A YAML file read within bounds; any failure is a :class:`ScenarioError` naming the file."""
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise ScenarioError(f"{what} {path}: {size / 2**20:.1f} MB, over the {MAX_YAML_BYTES // 2**20} MB a file may have")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ScenarioError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    return parse_yaml(text, f"{what} {path.name}")


def parse_yaml(text: str, what: str) -> Any:
    """YAML text read safely and within bounds (nesting depth, aliases); a :class:`ScenarioError`
    whose one line starts with ``what`` otherwise -- never a ``RecursionError`` or a crash."""
    depth = deepest = aliases = 0
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):  # libyaml's parser keeps its own stack
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                deepest = max(deepest, depth)
                if deepest > MAX_YAML_DEPTH:
                    raise ScenarioError(f"{what}: nested deeper than {MAX_YAML_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_YAML_ALIASES:
                    raise ScenarioError(f"{what}: more than {MAX_YAML_ALIASES} aliases")
        return yaml.load(text, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        said = " ".join(str(exc).split())
        if "nesting depth" in said:  # PyYAML >= 6.0.4 stops deep nesting itself, before our count does
            raise ScenarioError(f"{what}: nested deeper than {MAX_YAML_DEPTH} levels") from None
        raise ScenarioError(f"{what}: not valid YAML: {said}") from None


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Set ``{"a.b.c": value}`` entries into a nested mapping (a copy), creating levels as needed."""
    result = copy.deepcopy(raw)
    for dotted, value in overrides.items():
        keys = str(dotted).split(".")
        if not all(keys):
            raise ScenarioError(f"override {dotted!r}: empty key in dotted path")
        node = result
        for depth, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            elif not isinstance(child, dict):
                where = ".".join(keys[: depth + 1])
                raise ScenarioError(f"override {dotted!r}: {where} is a value, not a section")
            node = child
        node[keys[-1]] = value
    return result


def format_validation_error(prefix: str, exc: ValidationError, data: Any = None) -> str:
    """One line naming the first bad field path and value (and how many more problems there are)."""
    errors = exc.errors(include_url=False)
    # An unknown name first: a misspelt key usually also leaves the key it meant missing.
    first = next((e for e in errors if e["type"] in ("extra_forbidden", "union_tag_invalid")), errors[0])
    raw = [str(part) for part in first["loc"]]
    loc = [part for part in raw if part not in _DIST_TAGS]
    path = ".".join(p if not p.isdigit() else f"[{p}]" for p in loc).replace(".[", "[")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        # Inside a distribution the location carries its family's tag: its parameters are the keys.
        family = _DIST_MODELS.get(raw[-2]) if len(raw) > 1 else None
        known = [k for k in family.model_fields if k != "dist"] if family else _keys_at(loc[:-1])
        close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6) if loc else []
        message = "unknown key" + (f" (did you mean {'.'.join([*loc[:-1], close[0]])}?)" if close else "")
    elif first["type"] == "union_tag_invalid":  # dist: a family that does not exist
        tag = str(first.get("ctx", {}).get("tag", ""))
        close = difflib.get_close_matches(tag, list(_DIST_MODELS), n=1, cutoff=0.6)
        message = f"unknown dist {tag!r} " + (f"(did you mean {close[0]}?)" if close else f"(one of {', '.join(_DIST_MODELS)})")
    value = first.get("input")
    shown = "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
    more = f" [+{len(errors) - 1} more]" if len(errors) > 1 else ""
    field = f"{path}: " if path else ""
    return f"{prefix}: {field}{message}{shown}{more}"


def _keys_at(path: Sequence[str]) -> list[str]:
    """The keys a scenario section takes (for "did you mean"), or [] where the path leaves the models."""
    from pydantic import BaseModel

    model: Any = Scenario
    for part in path:
        field = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return []
        model = next((t for t in (field.annotation, *typing.get_args(field.annotation))
                      if isinstance(t, type) and issubclass(t, BaseModel)), None)
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def load_scenario(
    name_or_path: str | os.PathLike[str] | Scenario, overrides: Mapping[str, Any] | None = None
) -> Scenario:
    """Load a scenario by name (see :func:`scenario_names`), YAML path, or copy a loaded one.

    ``overrides`` maps dotted paths to values, e.g. ``{"staffing.resolver": 3}``. Relative paths in
    the scenario (ticket bank, arrival trace) resolve against the scenario file's folder, then
    against the scenarios folder. Raises :class:`ScenarioError` with one line naming what is wrong.
    """
    if isinstance(name_or_path, Scenario):
        raw = name_or_path.model_dump(mode="json", exclude_unset=True)
        base = None
        label = name_or_path.name
    else:
        path = _find(name_or_path)
        raw = _scenario_yaml(path)
        if not isinstance(raw, dict):
            raise ScenarioError(f"scenario {path.name}: expected a mapping at the top level")
        base = path.parent
        label = str(raw.get("name") or path.stem)
    raw = apply_overrides(raw, overrides or {})
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(f"scenario {label!r}", exc)) from None
    updates: dict[str, Any] = {}
    bank = _resolve(scenario.tickets.bank, base, f"scenario {label!r}: tickets.bank")
    updates["tickets"] = scenario.tickets.model_copy(update={"bank": str(bank)})
    if scenario.arrivals.trace is not None:
        trace = _resolve(scenario.arrivals.trace, base, f"scenario {label!r}: arrivals.trace")
        updates["arrivals"] = scenario.arrivals.model_copy(update={"trace": str(trace)})
        read_trace(str(trace))
    scenario = scenario.model_copy(update=updates)
    bank = load_ticket_bank(scenario.tickets.bank)  # fail now, not mid-run
    try:
        bank.templates_in(scenario.tickets.split, scenario.tickets.templates)
    except ValueError as exc:
        raise ScenarioError(f"scenario {label!r}: {exc}") from None
    if not bank.templates_in(scenario.tickets.split):
        raise ScenarioError(
            f"scenario {label!r}: tickets.split {scenario.tickets.split!r}: the bank "
            f"{Path(scenario.tickets.bank).name} holds no {scenario.tickets.split} tickets"
        )
    return scenario


def _resolve(relative: str, base: Path | None, what: str) -> Path:
    path = Path(relative)
    candidates = [path] if path.is_absolute() else [
        *([base / path] if base is not None else []),
        scenarios_dir() / path,
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise ScenarioError(f"{what}: file not found: {relative!r}")


@lru_cache(maxsize=8)
def load_ticket_bank(path: str) -> TicketBank:
    """Load and validate a ticket bank YAML file (cached per path)."""
    file = Path(path)
    if not file.is_file():
        raise ScenarioError(f"ticket bank not found: {path}")
    raw = read_yaml_file(file, "ticket bank")
    try:
        return TicketBank.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(f"ticket bank {file.name}", exc)) from None


@lru_cache(maxsize=8)
def read_trace(path: str) -> tuple[float, ...]:
    """Arrival minutes from a CSV trace: one column ``arrival_minute`` (a header row is optional).

    Times must be non-negative and in order; the message names the first bad line.
    """
    file = Path(path)
    if not file.is_file():
        raise ScenarioError(f"arrival trace not found: {path}")
    try:
        times = _trace_times(file)
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"arrival trace {file}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ScenarioError(f"arrival trace {file}: cannot be read ({exc.strerror or exc})") from None
    if not times:
        raise ScenarioError(f"arrival trace {file.name}: no arrival times")
    return tuple(times)


def _trace_times(file: Path) -> list[float]:
    """The arrival minutes of a trace file, checked line by line (see :func:`read_trace`)."""
    times: list[float] = []
    with open(file, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
                continue
            cell = row[0].strip()
            try:
                value = float(cell)
            except ValueError:
                if number == 1:
                    continue  # header
                raise ScenarioError(f"arrival trace {file.name}, line {number}: not a number: {cell!r}") from None
            if not math.isfinite(value):
                raise ScenarioError(f"arrival trace {file.name}, line {number}: not a finite number: {cell!r}")
            if value < 0 or (times and value < times[-1]):
                raise ScenarioError(
                    f"arrival trace {file.name}, line {number}: {value} is negative or out of order"
                )
            times.append(value)
    return times
