"""Checkpoint directory checks as :class:`CheckpointError` (the rules: ``arctic_swe._hf_layout``,
which imports no torch so a launcher can run them first)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from arctic_swe._hf_layout import LayoutError, checkpoint_problem
from arctic_swe._hf_layout import text_config_dict as _text_config_dict
from arctic_swe.model._errors import CheckpointError


def check_checkpoint(path: str | os.PathLike[str], *, tokenizer: bool = True) -> Path:
    """Raise :class:`CheckpointError` unless ``path`` is a complete Qwen3.5 checkpoint directory
    (weights and, with ``tokenizer``, the tokenizer and chat template); returns the path.

    The message is one line: ``"DIR is not a usable Qwen3.5 checkpoint: no X; no Y"`` (or
    ``"checkpoint directory not found: DIR"``).
    """
    problem = checkpoint_problem(path, tokenizer=tokenizer)
    if problem is not None:
        raise CheckpointError(problem)
    return Path(path)


def text_config_dict(directory: Path) -> tuple[dict[str, Any], bool]:
    """The text model's config dict and whether the layout is the composite ``qwen3_5`` one;
    :class:`CheckpointError` otherwise."""
    try:
        return _text_config_dict(directory)
    except LayoutError as exc:
        raise CheckpointError(str(exc)) from exc
