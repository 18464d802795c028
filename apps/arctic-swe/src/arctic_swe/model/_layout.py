"""What a local Hugging Face Qwen3.5 checkpoint directory must hold to serve as the policy.

A policy directory is the weights (``config.json`` of a Qwen3.5 model + ``*.safetensors``) and
the tokenizer (``tokenizer.json``, its ``tokenizer_config.json`` and a chat template, either the
``chat_template`` field of ``tokenizer_config.json`` or a ``chat_template.jinja`` file), the
layout ``save_pretrained`` writes and the Hugging Face hub ships. :func:`check_checkpoint`
checks it up front so a command (``serve``, ``cluster up``) fails in one line naming every
missing piece before anything starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arctic_swe.model._errors import CheckpointError

#: ``model_type`` values accepted: the text model, and the full (vision-language) Qwen3.5
#: checkpoint whose ``text_config`` describes the language model.
TEXT_MODEL_TYPE = "qwen3_5_text"
COMPOSITE_MODEL_TYPE = "qwen3_5"


def check_checkpoint(path: str | os.PathLike[str], *, tokenizer: bool = True) -> Path:
    """Raise :class:`CheckpointError` unless ``path`` is a complete Qwen3.5 checkpoint directory
    (weights and, with ``tokenizer``, the tokenizer and chat template); returns the path.

    The message is one line: ``"DIR is not a usable Qwen3.5 checkpoint: missing X; Y"``.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    problems: list[str] = []
    problems += _config_problems(directory)
    if not any(directory.glob("*.safetensors")):
        problems.append("no *.safetensors weights")
    if tokenizer:
        problems += _tokenizer_problems(directory)
    if problems:
        raise CheckpointError(
            f"{directory} is not a usable Qwen3.5 checkpoint: " + "; ".join(problems)
        )
    return directory


def text_config_dict(directory: Path) -> tuple[dict[str, Any], bool]:
    """The text model's config as a dict and whether the checkpoint is the composite
    ``qwen3_5`` (vision-language) layout; :class:`CheckpointError` otherwise."""
    raw = _read_json(directory / "config.json")
    model_type = raw.get("model_type")
    if model_type == TEXT_MODEL_TYPE:
        return raw, False
    text = raw.get("text_config")
    if model_type == COMPOSITE_MODEL_TYPE and isinstance(text, dict):
        return {**text, "model_type": TEXT_MODEL_TYPE}, True
    raise CheckpointError(
        f"{directory} holds a {model_type!r} model, not a Qwen3.5 text model "
        f"(config.json model_type {TEXT_MODEL_TYPE!r}, or {COMPOSITE_MODEL_TYPE!r} with a "
        "text_config)"
    )


def _config_problems(directory: Path) -> list[str]:
    if not (directory / "config.json").is_file():
        return ["no config.json"]
    try:
        text_config_dict(directory)
    except CheckpointError as exc:
        return [str(exc).removeprefix(f"{directory} ")]
    return []


def _tokenizer_problems(directory: Path) -> list[str]:
    problems: list[str] = []
    if not (directory / "tokenizer.json").is_file():
        problems.append("no tokenizer.json")
    config_file = directory / "tokenizer_config.json"
    if not config_file.is_file():
        problems.append("no tokenizer_config.json")
        return problems
    try:
        config = _read_json(config_file)
    except CheckpointError as exc:
        return [*problems, str(exc)]
    if not config.get("chat_template") and not (directory / "chat_template.jinja").is_file():
        problems.append(
            "no chat template (tokenizer_config.json chat_template or chat_template.jinja)"
        )
    return problems


def _read_json(file: Path) -> dict[str, Any]:
    try:
        raw = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"unreadable {file}: {exc}") from exc
    if not isinstance(raw, dict):
        raise CheckpointError(f"{file} is not a JSON object")
    return raw
