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

import json
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from arctic_swe._step_dirs import prune_steps, staged_dir, write_latest
from arctic_swe.trainer import Restored, ResumeError
from deck_evictor import Deck, DeckError


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
        torch.save(
            {"torch": torch.get_rng_state(), "python": random.getstate()}, staging / "rng.pt"
        )
        deck.save(staging / "deck.state")
        state = {
            "step": step,
            "version": version,
            "metrics_lines": metrics_lines,
            "extras": dict(extras),
            "trainer": "remote",
            "trainer_checkpoint": str(trainer_checkpoint),
        }
        (staging / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True))
    target = root / name
    write_latest(root, name)
    prune_steps(root, keep, current=name)
    return target


def load_loop_state(path: Path) -> Restored:
    """The loop's state saved by :func:`save_loop_state` (RNG states restored here)."""
    try:
        state = json.loads((path / "state.json").read_text())
        deck = Deck.load(path / "deck.state")
        rng = torch.load(path / "rng.pt", weights_only=False)
    except (OSError, json.JSONDecodeError, DeckError) as exc:
        raise ResumeError(f"cannot resume from {path}: {exc}") from exc
    if state.get("trainer") != "remote":
        raise ResumeError(f"{path} was written by an in-process trainer, not a remote one")
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    return Restored(
        step=int(state["step"]),
        version=int(state["version"]),
        metrics_lines=int(state["metrics_lines"]),
        deck=deck,
        extras=dict(state["extras"]),
        path=path,
    )
