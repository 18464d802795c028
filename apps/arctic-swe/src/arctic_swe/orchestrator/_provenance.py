"""Record what a run trains from (``RUN/inputs.json``) and refuse to resume it on another deck.

A resumed run continues from its checkpoint, whose deck state (active, retired, replay) names
the deck's tasks: resumed against a deck with other content, it would train on tasks its state
does not describe, so that is refused with a typed error. The warm start matters only for the
first update; a changed one is reported and the original record kept.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from arctic_swe.config import (
    PROCEDURAL_DECK,
    RunConfig,
    RunDir,
    RunInputs,
    fingerprint_inputs,
    read_run_inputs,
    write_run_inputs,
)
from arctic_swe.orchestrator._setup import Inputs, SetupError


class InputsChangedError(SetupError):
    """``--resume`` against a deck whose content differs from the one the run started on."""


def pool_source(config: RunConfig, inputs: Inputs) -> Path:
    """Where the run's pool comes from: the deck directory (the procedural deck), or the
    ``deck.source`` file of task rows (the deck directory may then not exist at all)."""
    if config.deck.source == PROCEDURAL_DECK:
        return inputs.deck_dir
    return Path(config.deck.source)


def record_inputs(
    run: RunDir, config: RunConfig, inputs: Inputs, *, resume: bool, console: Console
) -> RunInputs:
    """Fingerprint the pool's source and the warm start; write ``RUN/inputs.json`` for a new
    run (or a resumed one without the record) and check a resumed run's deck against it.
    Returns the run's record."""
    deck = pool_source(config, inputs)
    now = fingerprint_inputs(deck, inputs.policy_dir)
    before = read_run_inputs(run) if resume else None
    if before is None:
        write_run_inputs(run, now)
        console.print(f"inputs: {now.short()}")
        return now
    if before.deck_sha256 != now.deck_sha256:
        raise InputsChangedError(
            f"{run.root} started from deck {before.deck} (sha256 {before.deck_sha256[:12]}); "
            f"{deck} holds other content now (sha256 {now.deck_sha256[:12]}): "
            "resume it with the deck it started from"
        )
    if before.policy_sha256 != now.policy_sha256:
        console.print(
            f"note: {inputs.policy_dir} is not the warm start this run started from "
            f"(sha256 {now.policy_sha256[:12]}, recorded {before.policy_sha256[:12]}); the run "
            "continues from its own checkpoint, so this does not change it"
        )
    return before
