"""The loop's part of a checkpoint, shared by both trainer kinds (Arctic-SWE §3.3, exact
resume): ``rng.pt`` (torch / python RNG states), ``deck.state`` and ``state.json`` (step,
policy version, metrics cursor, run extras, and what wrote it).

The in-process checkpoint adds the model and the optimizer beside these files; a remote
trainer's run adds a link to the trainer's export (:mod:`arctic_swe.distributed._loopstate`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arctic_swe.trainer._errors import ResumeError
from deck_evictor import Deck, DeckError


@dataclass(frozen=True)
class Restored:
    """What a checkpoint gives back besides the restored trainer."""

    step: int
    version: int
    metrics_lines: int  # lines of metrics.jsonl that belong to this checkpoint
    deck: Deck
    extras: dict[str, Any]
    path: Path


@dataclass(frozen=True)
class RunState:
    """The files of :func:`write_run_state`, read back (RNG states not yet applied)."""

    state: dict[str, Any]
    deck: Deck
    rng: dict[str, Any]


def write_run_state(directory: Path, deck: Deck, state: Mapping[str, Any]) -> None:
    """Write the current RNG states, ``deck`` and ``state`` (as ``state.json``) into
    ``directory`` (a checkpoint's staging directory)."""
    torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, directory / "rng.pt")
    deck.save(directory / "deck.state")
    (directory / "state.json").write_text(json.dumps(dict(state), indent=1, sort_keys=True))


def read_run_state(path: Path) -> RunState:
    """The run-state files of checkpoint ``path``; :class:`ResumeError` if any is unreadable."""
    try:
        state = json.loads((path / "state.json").read_text())
        deck = Deck.load(path / "deck.state")
        rng = torch.load(path / "rng.pt", weights_only=False)
    except (OSError, json.JSONDecodeError, DeckError) as exc:
        raise ResumeError(f"cannot resume from {path}: {exc}") from exc
    return RunState(state, deck, rng)


def restore_run_state(path: Path, run: RunState) -> Restored:
    """Apply the saved RNG states and return what the loop resumes from."""
    try:
        torch.set_rng_state(run.rng["torch"])
        random.setstate(run.rng["python"])
        state = run.state
        return Restored(
            step=int(state["step"]),
            version=int(state["version"]),
            metrics_lines=int(state["metrics_lines"]),
            deck=run.deck,
            extras=dict(state["extras"]),
            path=path,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ResumeError(f"cannot resume from {path}: bad state: {exc}") from exc
