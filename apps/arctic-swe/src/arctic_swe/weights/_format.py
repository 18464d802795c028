"""The published-weights format and its one writer (Arctic-SWE §3.3: every policy version the
engines load).

Version ``N`` is the directory ``ROOT/policy-vN/`` (``ROOT`` is ``RUN/weights`` for a run)::

    policy-vN/model.safetensors   every tensor under its Hugging Face name, tied aliases left
                                  out, header metadata {"format": "pt"}
    policy-vN/manifest.json       {"format": "arctic-swe-weights", "format_version": 1,
                                   "version": N, "file": "model.safetensors", "bytes": ...,
                                   "sha256": ..., "tensors": {name: {"dtype", "shape"}}}

The safetensors file is exactly what vLLM 0.33's ``reload_weights(weights_path=DIR,
is_checkpoint_format=True)`` reads (its loader globs ``DIR/*.safetensors``), and what
``arctic-swe serve`` and the in-process engines read. The manifest lets a reader refuse a
corrupt, truncated or swapped file before a tensor is loaded (:func:`read_weights`); a
directory without one (written before the manifest existed, or a bare file) is still read, its
safetensors header checked. The directory is staged and renamed into place
(:func:`staged_dir`), so an engine never reads half of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from arctic_swe._atomic import atomic_file, atomic_write_text, prune_steps, staged_dir
from arctic_swe.weights._header import header_of
from arctic_swe.weights._tied import owned_weights

#: The safetensors file of a published version's directory.
WEIGHTS_FILE = "model.safetensors"
#: The manifest beside it.
MANIFEST_FILE = "manifest.json"
FORMAT = "arctic-swe-weights"
FORMAT_VERSION = 1
_PREFIX = "policy-v"
_CHUNK = 1 << 24


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a manifest: its safetensors dtype name (``F32``, ``BF16`` …) and shape."""

    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Manifest:
    """What a published version holds (``manifest.json``)."""

    version: int
    file: str
    bytes: int
    sha256: str
    tensors: Mapping[str, TensorEntry]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "file": self.file,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "tensors": {
                name: {"dtype": entry.dtype, "shape": list(entry.shape)}
                for name, entry in sorted(self.tensors.items())
            },
        }


def run_weights(run_dir: Path) -> Path:
    """Where a run publishes its versions: ``RUN/weights`` (the root of every ``policy-vN``)."""
    return run_dir / "weights"


def published_dir(root: Path, version: int) -> Path:
    """``root/policy-v<version>``."""
    return root / f"{_PREFIX}{version}"


def weights_file(published: Path) -> Path:
    """The safetensors file of a published version (a directory), or ``published`` itself
    when it is already a file."""
    return published / WEIGHTS_FILE if published.is_dir() else published


def write_safetensors(weights: Mapping[str, torch.Tensor] | torch.nn.Module, path: Path) -> Path:
    """Write a state dict (or a module's, tied aliases left out) as one ``.safetensors`` file,
    atomically (:func:`atomic_file`), so a reader of ``path`` never sees half a file. Tensors
    are copied to CPU; two that share memory are written as two. Returns ``path``."""
    if isinstance(weights, torch.nn.Module):
        weights = owned_weights(weights)
    tensors: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for name, tensor in weights.items():
        tensor = tensor.detach().to("cpu").contiguous()
        if tensor.untyped_storage().data_ptr() in storages:
            tensor = tensor.clone()  # safetensors refuses tensors that share memory
        storages.add(tensor.untyped_storage().data_ptr())
        tensors[name] = tensor
    with atomic_file(Path(path)) as staging:
        save_file(tensors, str(staging), metadata={"format": "pt"})
    return Path(path)


def publish(weights: Mapping[str, torch.Tensor], root: Path, version: int) -> Path:
    """Write ``weights`` as version ``version`` under ``root`` (file and manifest, staged);
    returns the directory. Republishing a version (a resumed run) replaces it whole."""
    directory = published_dir(root, version)
    with staged_dir(root, directory.name) as staging:
        file = write_safetensors(weights, staging / WEIGHTS_FILE)
        manifest = manifest_of(file, version)
        atomic_write_text(staging / MANIFEST_FILE, json.dumps(manifest.to_json(), indent=1))
    return directory


def prune(root: Path, *, keep: int, current: Path) -> None:
    """Delete all but the newest ``keep`` published versions (never ``current``) and any
    staging a crash left: an engine may still be loading the previous one."""
    prune_steps(root, keep, current.name, prefix=_PREFIX)


def manifest_of(file: Path, version: int) -> Manifest:
    """The manifest of a written safetensors ``file`` published as ``version``."""
    header = header_of(file)
    return Manifest(
        version=version,
        file=file.name,
        bytes=file.stat().st_size,
        sha256=file_digest(file),
        tensors={name: TensorEntry(dtype, shape) for name, (shape, dtype) in header.items()},
    )


def file_digest(file: Path) -> str:
    """SHA-256 of ``file``'s bytes (hex), read in 16 MiB chunks."""
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
