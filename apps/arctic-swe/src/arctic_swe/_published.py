"""Where a run publishes each policy version for the engines (Arctic-SWE §3.3).

Version ``N`` is the directory ``RUN/weights/policy-vN/`` holding one ``model.safetensors``
(Hugging Face parameter names, tied aliases left out): exactly what vLLM 0.33's
``reload_weights(weights_path=DIR, is_checkpoint_format=True)`` reads (its loader globs
``DIR/*.safetensors``), and what ``arctic-swe serve`` and the in-process engine read too. The
file is written under a temporary name and renamed into place, so an engine never reads half
of it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors.torch import save_file

#: The one file of a published version's directory.
WEIGHTS_FILE = "model.safetensors"
_PREFIX = "policy-v"


def published_dir(root: Path, version: int) -> Path:
    """``root/policy-v<version>``."""
    return root / f"{_PREFIX}{version}"


def publish(weights: Mapping[str, torch.Tensor], root: Path, version: int) -> Path:
    """Write ``weights`` as version ``version`` under ``root``; returns the directory."""
    directory = published_dir(root, version)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / WEIGHTS_FILE
    staging = directory / f".{WEIGHTS_FILE}.tmp"
    save_file(dict(weights), str(staging), metadata={"format": "pt"})
    os.replace(staging, target)
    return directory


def weights_file(published: Path) -> Path:
    """The safetensors file of a published version (a directory), or ``published`` itself
    when it is already a file."""
    return published / WEIGHTS_FILE if published.is_dir() else published


def published_versions(root: Path) -> list[tuple[int, Path]]:
    """``(version, directory)`` of every published version under ``root``, oldest first;
    entries not named ``policy-v<N>`` are ignored."""
    found = []
    for entry in root.glob(f"{_PREFIX}*"):
        suffix = entry.name.removeprefix(_PREFIX)
        if entry.is_dir() and suffix.isdigit():
            found.append((int(suffix), entry))
    return sorted(found)


def prune(root: Path, *, keep: int, current: Path) -> None:
    """Delete all but the newest ``keep`` published versions (never ``current``): an engine
    may still be loading the previous one."""
    versions = published_versions(root)
    for _version, directory in versions[: max(len(versions) - keep, 0)]:
        if directory != current:
            shutil.rmtree(directory, ignore_errors=True)
