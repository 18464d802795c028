"""Where a run publishes each policy version for the engines (Arctic-SWE §3.3).

Version ``N`` is the directory ``RUN/weights/policy-vN/`` holding one ``model.safetensors``
(Hugging Face parameter names, tied aliases left out): exactly what vLLM 0.33's
``reload_weights(weights_path=DIR, is_checkpoint_format=True)`` reads (its loader globs
``DIR/*.safetensors``), and what ``arctic-swe serve`` and the in-process engine read too. The
directory is written through the checkpoints' staging protocol (:mod:`arctic_swe._step_dirs`:
a hidden directory renamed into place), so an engine never reads half of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors.torch import save_file

from arctic_swe._step_dirs import prune_steps, staged_dir

#: The one file of a published version's directory.
WEIGHTS_FILE = "model.safetensors"
_PREFIX = "policy-v"


def published_dir(root: Path, version: int) -> Path:
    """``root/policy-v<version>``."""
    return root / f"{_PREFIX}{version}"


def publish(weights: Mapping[str, torch.Tensor], root: Path, version: int) -> Path:
    """Write ``weights`` as version ``version`` under ``root``; returns the directory."""
    directory = published_dir(root, version)
    with staged_dir(root, directory.name) as staging:
        save_file(dict(weights), str(staging / WEIGHTS_FILE), metadata={"format": "pt"})
    return directory


def weights_file(published: Path) -> Path:
    """The safetensors file of a published version (a directory), or ``published`` itself
    when it is already a file."""
    return published / WEIGHTS_FILE if published.is_dir() else published


def prune(root: Path, *, keep: int, current: Path) -> None:
    """Delete all but the newest ``keep`` published versions (never ``current``) and any
    staging a crash left: an engine may still be loading the previous one."""
    prune_steps(root, keep, current.name, prefix=_PREFIX)
