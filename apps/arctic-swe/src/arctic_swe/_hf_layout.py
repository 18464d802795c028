"""What a local Hugging Face Qwen3.5 checkpoint directory must hold, checked without torch.

A policy directory is the weights (``config.json`` of a Qwen3.5 model + ``*.safetensors``) and
the tokenizer (``tokenizer.json``, its ``tokenizer_config.json`` and a chat template, either the
``chat_template`` field of ``tokenizer_config.json`` or a ``chat_template.jinja`` file), the
layout ``save_pretrained`` writes and the Hugging Face hub ships. This module imports only the
standard library, so a launcher can check a checkpoint before it loads anything heavy;
``arctic_swe.model.check_checkpoint`` raises the same message as a ``CheckpointError``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: ``model_type`` values accepted: the text model, and the full (vision-language) Qwen3.5
#: checkpoint whose ``text_config`` describes the language model.
TEXT_MODEL_TYPE = "qwen3_5_text"
COMPOSITE_MODEL_TYPE = "qwen3_5"


class LayoutError(ValueError):
    """A checkpoint file is unreadable or describes a model other than Qwen3.5."""


def checkpoint_problem(path: str | os.PathLike[str], *, tokenizer: bool = True) -> str | None:
    """``None`` when ``path`` is a complete Qwen3.5 checkpoint directory (weights and, with
    ``tokenizer``, the tokenizer and chat template), else a one-line message naming every
    missing piece: ``"DIR is not a usable Qwen3.5 checkpoint: no X; no Y"``."""
    directory = Path(path)
    if not directory.is_dir():
        return f"checkpoint directory not found: {directory}"
    problems = _config_problems(directory)
    if not any(directory.glob("*.safetensors")):
        problems.append("no *.safetensors weights")
    if tokenizer:
        problems += _tokenizer_problems(directory)
    if problems:
        return f"{directory} is not a usable Qwen3.5 checkpoint: " + "; ".join(problems)
    return None


def text_config_dict(directory: Path) -> tuple[dict[str, Any], bool]:
    """The text model's config as a dict and whether the checkpoint is the composite
    ``qwen3_5`` (vision-language) layout; :class:`LayoutError` otherwise."""
    raw = read_json(directory / "config.json")
    model_type = raw.get("model_type")
    if model_type == TEXT_MODEL_TYPE:
        return raw, False
    text = raw.get("text_config")
    if model_type == COMPOSITE_MODEL_TYPE and isinstance(text, dict):
        return {**text, "model_type": TEXT_MODEL_TYPE}, True
    raise LayoutError(
        f"{directory} holds a {model_type!r} model, not a Qwen3.5 text model "
        f"(config.json model_type {TEXT_MODEL_TYPE!r}, or {COMPOSITE_MODEL_TYPE!r} with a "
        "text_config)"
    )


def read_json(file: Path) -> dict[str, Any]:
    """A JSON object from ``file``; :class:`LayoutError` if unreadable or not an object."""
    try:
        raw = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LayoutError(f"unreadable {file}: {exc}") from exc
    if not isinstance(raw, dict):
        raise LayoutError(f"{file} is not a JSON object")
    return raw


def _config_problems(directory: Path) -> list[str]:
    if not (directory / "config.json").is_file():
        return ["no config.json"]
    try:
        text_config_dict(directory)
    except LayoutError as exc:
        return [str(exc).removeprefix(f"{directory} ")]
    return []


def _tokenizer_problems(directory: Path) -> list[str]:
    problems: list[str] = []
    if not (directory / "tokenizer.json").is_file():
        problems.append("no tokenizer.json")
    config_file = directory / "tokenizer_config.json"
    if not config_file.is_file():
        return [*problems, "no tokenizer_config.json"]
    try:
        config = read_json(config_file)
    except LayoutError as exc:
        return [*problems, str(exc)]
    if not config.get("chat_template") and not (directory / "chat_template.jinja").is_file():
        problems.append(
            "no chat template (tokenizer_config.json chat_template or chat_template.jinja)"
        )
    return problems
