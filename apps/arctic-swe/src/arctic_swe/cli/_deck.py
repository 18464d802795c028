"""``arctic-swe deck build``: generate the embedded deck, train its tokenizer, validate it;
``arctic-swe deck import``: a deck of real tasks from dataset rows."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_int
from arctic_swe._execute import CommandError, user_errors
from arctic_swe._issue_styles import ISSUE_STYLES, LINE_STYLE
from arctic_swe.cli._checks import require_writable_directory
from arctic_swe.cli._deck_import import add_import_parser, run_import
from arctic_swe.cli._defaults import DEFAULT_DECK
from arctic_swe.cli._output import console
from arctic_swe.config import TOKENIZER_DIR

if TYPE_CHECKING:
    from arctic_swe.deck import StoredDeck


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    deck = subparsers.add_parser(
        "deck", help="build the embedded deck, or import dataset rows as a deck of real tasks"
    )
    actions = deck.add_subparsers(dest="deck_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="generate the deck, train the tokenizer on it, validate it with Pipeline 1",
        description="Write DIR/deck.json, DIR/repos/*, DIR/tokenizer/ and DIR/audit.jsonl.",
    )
    build.add_argument(
        "--out", default=DEFAULT_DECK, help="deck directory, replaced (default: %(default)s)"
    )
    build.add_argument(
        "--seed", type=non_negative_int, default=0, help="deck seed (default: %(default)s)"
    )
    build.add_argument(
        "--pool-size",
        type=positive_int,
        default=160,
        help="stress-test pool size (default: %(default)s)",
    )
    build.add_argument(
        "--heldout-size",
        type=non_negative_int,
        default=40,
        help="held-out size (default: %(default)s)",
    )
    build.add_argument(
        "--warmstart-size",
        type=non_negative_int,
        default=200,
        help="warm-start split size (default: %(default)s)",
    )
    build.add_argument(
        "--issue-style",
        choices=ISSUE_STYLES,
        default=LINE_STYLE,
        help="how each task's issue is written: 'line' names the function, one failing call, "
        "the wrong line and the right one (the fix is a copy: what a tiny policy can learn); "
        "'behaviour' names the function and gives every test input with the actual and the "
        "expected output (computed by running the buggy and the fixed code) and the failing "
        "test, never the line or the fix (solving it takes inferring the edit, which tells "
        "memorising the pool from the skill). Same tasks and fixes either way; stored in the "
        "manifest (default: %(default)s)",
    )
    build.add_argument(
        "--vocab-size",
        type=positive_int,
        default=2048,
        help="BPE vocabulary size (default: %(default)s)",
    )
    build.add_argument(
        "--validate",
        choices=("all", "sample", "none"),
        default="sample",
        help="Pipeline 1 on every pool/held-out task, on an evenly spaced sample, or not at all "
        "(default: %(default)s)",
    )
    build.add_argument(
        "--sample", type=positive_int, default=16, help="tasks in the sample (default: %(default)s)"
    )
    build.add_argument(
        "--reruns",
        type=positive_int,
        default=2,
        help="Pipeline 1 runs per tree (default: %(default)s)",
    )
    build.add_argument(
        "--workers",
        type=positive_int,
        default=2,
        help="sandboxes in parallel (default: %(default)s)",
    )
    add_import_parser(actions)
    return deck


def run(args: argparse.Namespace) -> int:
    """``deck build``: generate the deck, train the tokenizer on it, validate with Pipeline 1;
    ``deck import``: see :mod:`arctic_swe.cli._deck_import`."""
    if args.deck_command == "import":
        return run_import(args)
    require_writable_directory(args.out, "the deck")  # before transformers loads
    from arctic_swe.chat import ChatError, save_tokenizer, train_tokenizer
    from arctic_swe.deck import DeckConfig, StoredDeckError, write_deck
    from arctic_swe.harness import TINY_HARNESS
    from arctic_swe.warmstart import deck_corpus

    out = console()
    with user_errors(StoredDeckError, ChatError):
        config = DeckConfig(
            args.seed, args.pool_size, args.heldout_size, args.warmstart_size, args.issue_style
        )
        try:
            deck = write_deck(args.out, config)
        except OSError as exc:
            raise CommandError(f"cannot write the deck to {args.out}: {exc.strerror}") from exc
        tokenizer = train_tokenizer(deck_corpus(deck, TINY_HARNESS), args.vocab_size)
        save_tokenizer(tokenizer, Path(args.out) / TOKENIZER_DIR)
    out.print(
        f"deck written to {args.out}: pool {config.pool_size}, held-out {config.heldout_size}, "
        f"warm-start {config.warmstart_size}, {config.issue_style}-style issues; "
        f"tokenizer of {len(tokenizer)} tokens"
    )
    if args.validate == "none":
        return 0
    return _validate(deck, args)


def _validate(deck: StoredDeck, args: argparse.Namespace) -> int:
    from rich.table import Table

    from arctic_swe._progress import stage_progress
    from arctic_swe.deck import validate_deck
    from swe_sandbox import DEFAULT_BACKEND, create_backend

    out = console()
    splits = ("pool", "heldout")
    chosen = [task for split in splits for task in deck.split(split)]
    if args.validate == "sample":
        step = max(1, len(chosen) // args.sample)
        chosen = chosen[::step][: args.sample]
    with stage_progress(console(stderr=True)) as progress:
        bar = progress.add_task("Pipeline 1", total=len(chosen), info="")
        _, report = validate_deck(
            deck,
            create_backend(DEFAULT_BACKEND),
            splits=splits,
            reruns=args.reruns,
            workers=args.workers,
            only={task.instance_id for task in chosen},
            on_task=lambda r: progress.update(
                bar, advance=1, info=f"{r.instance_id} {r.verdict.value}"
            ),
        )
    table = Table(title="Pipeline 1")
    table.add_column("admitted", justify="right")
    table.add_column("rejected", justify="right")
    table.add_column("reused", justify="right")
    table.add_row(str(len(report.admitted)), str(len(report.rejected)), str(report.skipped))
    out.print(table)
    for task_id, verdict in report.rejected.items():
        out.print(f"[red]rejected[/red] {task_id}: {verdict}")
    return 0 if report.ok else 1
