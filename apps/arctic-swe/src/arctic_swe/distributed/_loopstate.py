"""The orchestrator's half of a checkpoint when the trainer is a separate process.

With a remote trainer the model and AdamW state live in the trainer's sharded checkpoint
(``checkpoints/trainer/step-N``, written by ``POST /checkpoint``); the loop still owns the deck,
its RNG, the metrics cursor and the groups in flight. They are written as the in-process layout
``checkpoints/step-N/`` (same atomic staging + ``LATEST`` protocol, see
:mod:`arctic_swe.trainer._checkpoint`) with ``state.json`` saying ``"trainer": "remote"`` and
naming the trainer checkpoint, and ``model/`` a link to the trainer's consolidated export, so
``policy_dir(RUN_DIR)`` (``arctic-swe evaluate --policy RUN_DIR``) works for both kinds of run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arctic_swe._atomic import prune_steps, staged_dir, write_latest
from arctic_swe.trainer import (
    Restored,
    ResumeError,
    read_run_state,
    restore_run_state,
    write_run_state,
)
from deck_evictor import Deck


def save_loop_state(
    root: Path,
    deck: Deck,
    *,
    step: int,
    version: int,
    metrics_lines: int,
    extras: Mapping[str, Any],
    trainer_checkpoint: Path,
    keep: int,
) -> Path:
    """Write ``root/step-{step}`` (the loop's state; the model is the trainer's) atomically."""
    name = f"step-{step}"
    with staged_dir(root, name) as staging:
        exported = trainer_checkpoint / "model"
        if exported.is_dir():  # a trainer on this filesystem: link its consolidated export
            os.symlink(os.path.relpath(exported, root / name), staging / "model")
        state = {
            "step": step,
            "version": version,
            "metrics_lines": metrics_lines,
            "extras": dict(extras),
            "trainer": "remote",
            "trainer_checkpoint": str(trainer_checkpoint),
        }
        write_run_state(staging, deck, state)
    target = root / name
    write_latest(root, name)
    prune_steps(root, keep, current=name)
    return target


def load_loop_state(path: Path) -> Restored:
    """The loop's state saved by :func:`save_loop_state` (RNG states restored here)."""
    run = read_run_state(path)
    if run.state.get("trainer") != "remote":
        raise ResumeError(f"{path} was written by an in-process trainer, not a remote one")
    return restore_run_state(path, run)
