"""``arctic-swe warmstart``: scripted-expert trajectories on the warm-start split, SFT, checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_float, positive_int
from arctic_swe._execute import CommandInterruptedError, runtime_errors, user_errors
from arctic_swe.cli._checks import load_deck_first
from arctic_swe.cli._defaults import DEFAULT_DECK, DEFAULT_POLICY
from arctic_swe.cli._output import console
from arctic_swe.config import TOKENIZER_DIR, WARMSTART_STEPS, WARMSTART_TASKS, WARMSTART_WORKERS


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    warm = subparsers.add_parser(
        "warmstart",
        help="SFT the tiny policy on scripted-expert trajectories (the RFT stage)",
        description="Run the expert on the warm-start split, fine-tune, write a checkpoint. "
        "Ctrl-C or SIGTERM stops cleanly; the same command then resumes where it stopped.",
    )
    warm.add_argument(
        "--deck",
        default=DEFAULT_DECK,
        help="deck directory, from deck build (default: %(default)s)",
    )
    warm.add_argument(
        "--out",
        default=DEFAULT_POLICY,
        help="checkpoint directory, replaced (default: %(default)s)",
    )
    warm.add_argument(
        "--tasks",
        type=positive_int,
        default=WARMSTART_TASKS,
        help="warm-start tasks to use (default: %(default)s, the whole split)",
    )
    warm.add_argument(
        "--induction-steps",
        type=non_negative_int,
        default=200,
        help="stage 0: copy-task steps that give the random-init policy in-context copying; "
        "0 skips it (default: %(default)s)",
    )
    warm.add_argument(
        "--steps",
        type=positive_int,
        default=WARMSTART_STEPS,
        help="SFT optimiser steps (default: %(default)s)",
    )
    warm.add_argument(
        "--batch-size",
        type=positive_int,
        default=8,
        help="trajectories per step (default: %(default)s)",
    )
    warm.add_argument(
        "--lr", type=positive_float, default=3e-3, help="AdamW learning rate (default: %(default)s)"
    )
    warm.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="model and data seed (default: %(default)s)",
    )
    warm.add_argument(
        "--workers",
        type=positive_int,
        default=WARMSTART_WORKERS,
        help="expert sandboxes at once (default: %(default)s)",
    )
    warm.add_argument(
        "--threads", type=positive_int, default=2, help="torch CPU threads (default: %(default)s)"
    )
    return warm


def run(args: argparse.Namespace) -> int:
    """Expert trajectories on the warm-start split, SFT, checkpoint."""
    deck = load_deck_first(args.deck)  # before torch loads: a typo is answered at once
    import torch

    from arctic_swe.chat import ChatError, load_tokenizer
    from arctic_swe.deck import StoredDeckError
    from arctic_swe.model import PolicyError
    from arctic_swe.trainer import TrainerError
    from arctic_swe.warmstart import (
        InductionConfig,
        SFTConfig,
        WarmStartError,
        staging_dir,
        warm_start_live,
    )
    from swe_sandbox import DEFAULT_BACKEND, SandboxError, create_backend

    torch.set_num_threads(args.threads)
    with (
        user_errors(ChatError, StoredDeckError, PolicyError, WarmStartError),
        runtime_errors(SandboxError, TrainerError),
    ):
        tokenizer = load_tokenizer(Path(args.deck) / TOKENIZER_DIR)
        tasks = deck.split("warmstart")[: args.tasks]
        sft = SFTConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
        induction = InductionConfig(steps=args.induction_steps, seed=args.seed)
        try:
            warm_start_live(
                tasks,
                tokenizer,
                args.out,
                create_backend(DEFAULT_BACKEND),
                console(),
                sft=sft,
                induction=induction,
                model_seed=args.seed,
                concurrency=args.workers,
            )
        except KeyboardInterrupt:
            kept = staging_dir(args.out)
            if not kept.is_dir():
                raise
            raise CommandInterruptedError(
                f"in the warm start; run the same command again to resume (kept in {kept})"
            ) from None
    return 0
