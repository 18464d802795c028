"""Cheap checks of the paths a command was given, run before its heavy imports.

Loading torch and transformers takes seconds; a missing deck, a checkpoint directory that is
already there or a run directory without metrics must be answered at once. These checks use
only the standard library and say the same thing the loaders would say later; the loaders
still check everything they read (these only catch the common mistakes early).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from arctic_swe._execute import CommandError, user_errors
from arctic_swe._hf_layout import checkpoint_problem

if TYPE_CHECKING:
    from arctic_swe.deck import StoredDeck

#: The file that marks a deck directory (``arctic_swe.deck``'s manifest).
DECK_MANIFEST = "deck.json"


def require_deck(path: str | os.PathLike[str]) -> None:
    """A deck directory: ``path/deck.json`` exists (the message of ``load_deck``)."""
    if not (Path(path) / DECK_MANIFEST).is_file():
        raise CommandError(f"no deck at {path} (missing {DECK_MANIFEST})")


def load_deck_first(path: str | os.PathLike[str]) -> StoredDeck:
    """The deck at ``path``, loaded before torch (``arctic_swe.deck`` does not import it): a
    missing, unreadable or malformed deck is a usage error within a second."""
    require_deck(path)
    from arctic_swe.deck import StoredDeckError, load_deck

    with user_errors(StoredDeckError):
        return load_deck(path)


def require_directories(paths: Iterable[str | os.PathLike[str]], what: str) -> None:
    """Each of ``paths`` is an existing directory; ``what`` names it in the message."""
    for path in paths:
        if not Path(path).is_dir():
            state = "is not a directory" if Path(path).exists() else "does not exist"
            raise CommandError(f"{what} {path} {state}")


def require_file(path: str | os.PathLike[str], what: str) -> None:
    """``path`` is an existing regular file; ``what`` names it in the message."""
    if not Path(path).is_file():
        state = "is not a file" if Path(path).exists() else "no such file"
        raise CommandError(f"{what} {path}: {state}")


def require_checkpoint(path: str | os.PathLike[str]) -> None:
    """A complete Qwen3.5 checkpoint directory (the message of ``check_checkpoint``)."""
    problem = checkpoint_problem(path)
    if problem is not None:
        raise CommandError(problem)


def require_free_target(path: str | os.PathLike[str], *, force: bool) -> None:
    """``path`` may be written: absent or an empty directory, unless ``force`` (the rule and
    message of ``init_checkpoint``)."""
    target = Path(path)
    if force or not target.exists():
        return
    if not target.is_dir() or any(target.iterdir()):
        raise CommandError(f"{target} exists and is not empty (pass --force to replace it)")


def require_run_metrics(runs: Iterable[str | os.PathLike[str]]) -> None:
    """Each run directory holds a ``metrics.jsonl`` (the message of ``compare``'s reader)."""
    for run in runs:
        if not (Path(run) / "metrics.jsonl").is_file():
            raise CommandError(f"{run} has no metrics.jsonl")


def require_writable_directory(path: str | os.PathLike[str], what: str) -> None:
    """``path`` can be created or written as a directory: its nearest existing ancestor is a
    directory this process may write into (the message starts ``cannot write WHAT to PATH``)."""
    target = Path(path).absolute()
    for existing in (target, *target.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            raise CommandError(f"cannot write {what} to {path}: {existing} is not a directory")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise CommandError(f"cannot write {what} to {path}: {existing} is not writable")
        return
