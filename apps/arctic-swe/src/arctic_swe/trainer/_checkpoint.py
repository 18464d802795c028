"""Atomic, exactly-resumable checkpoints.

One checkpoint is a directory ``checkpoints/step-N/``::

    model/              Hugging Face checkpoint (config.json + model.safetensors, and the
                        tokenizer when the run passes one: a self-contained policy directory)
    trainer.pt          AdamW state and step count
    rng.pt              torch / python RNG states
    deck.state          deck-evictor state (its own atomic format)
    state.json          step, policy version, metrics cursor and any run extras

It is written into a hidden staging directory and renamed into place, then ``LATEST`` (a
one-line file naming it) is replaced atomically, so a crash at any instant leaves either the
previous checkpoint or the new one as ``LATEST`` — never a half-written one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast

from arctic_swe._atomic import prune_steps, read_latest, staged_dir, write_latest
from arctic_swe.model import CheckpointError, assign_weights, read_weights, save_policy
from arctic_swe.trainer._errors import ResumeError
from arctic_swe.trainer._runstate import (
    Restored,
    read_run_state,
    restore_run_state,
    write_run_state,
)
from arctic_swe.trainer._trainer import Trainer
from deck_evictor import Deck

_FILES = ("model", "trainer.pt", "rng.pt", "deck.state", "state.json")


def save_checkpoint(
    root: Path,
    trainer: Trainer,
    deck: Deck,
    *,
    version: int,
    metrics_lines: int,
    extras: Mapping[str, Any] | None = None,
    keep: int = 2,
    tokenizer: PreTrainedTokenizerFast | None = None,
) -> Path:
    """Write checkpoint ``step-{trainer.steps}`` under ``root`` atomically; prune all but the
    newest ``keep``. Returns its path.

    With ``tokenizer``, ``model/`` also holds it, so the checkpoint's policy can be sampled or
    evaluated on its own (``arctic-swe rollout|evaluate --policy RUN_DIR``)."""
    name = f"step-{trainer.steps}"
    with staged_dir(root, name) as staging:
        model: Any = trainer.model
        save_policy(model, staging / "model")
        if tokenizer is not None:
            tokenizer.save_pretrained(str(staging / "model"))
        torch.save(trainer.state_dict(), staging / "trainer.pt")
        state = {
            "step": trainer.steps,
            "version": version,
            "metrics_lines": metrics_lines,
            "extras": dict(extras or {}),
        }
        write_run_state(staging, deck, state)
    target = root / name
    write_latest(root, name)
    prune_steps(root, keep, current=name)
    return target


def latest_checkpoint(root: Path) -> Path | None:
    """The checkpoint ``LATEST`` names, or ``None`` when no checkpoint was ever completed."""
    path = read_latest(root)
    if path is None:
        return None
    required: tuple[str, ...] = _FILES
    if _written_by_remote_trainer(path):  # its model and optimizer are the trainer's
        required = tuple(f for f in _FILES if f not in ("trainer.pt", "model"))
    missing = [f for f in required if not (path / f).exists()]
    if missing:
        raise ResumeError(f"checkpoint {path} is incomplete: missing {missing}")
    return path


def load_checkpoint(path: Path, trainer: Trainer) -> Restored:
    """Restore model weights, optimizer, step count and RNG states into ``trainer`` and return
    the deck and run state saved with them. Raises :class:`ResumeError` on anything missing."""
    run = read_run_state(path)
    try:
        weights = read_weights(path / "model")
        assign_weights(trainer.model, weights)
        trainer.load_state_dict(torch.load(path / "trainer.pt", weights_only=False))
    except (OSError, KeyError, CheckpointError) as exc:
        raise ResumeError(f"cannot resume from {path}: {exc}") from exc
    if run.state.get("step") != trainer.steps:
        raise ResumeError(
            f"{path}: state.json says step {run.state.get('step')}, trainer {trainer.steps}"
        )
    return restore_run_state(path, run)


def policy_dir(path: str | os.PathLike[str]) -> Path:
    """The policy directory ``path`` stands for: a run directory gives its latest checkpoint's
    ``model/``, a checkpoint directory its ``model/``, anything else itself.

    Raises :class:`ResumeError` for a run directory whose checkpoints never completed.
    """
    given = Path(path)
    checkpoints = given / "checkpoints"
    if checkpoints.is_dir():
        latest = latest_checkpoint(checkpoints)
        if latest is None:
            raise ResumeError(f"run {given} has no completed checkpoint")
        return latest / "model"
    if (given / "model" / "config.json").is_file():
        return given / "model"
    return given


def _written_by_remote_trainer(path: Path) -> bool:
    try:
        return bool(json.loads((path / "state.json").read_text()).get("trainer") == "remote")
    except (OSError, json.JSONDecodeError, AttributeError):
        return False
