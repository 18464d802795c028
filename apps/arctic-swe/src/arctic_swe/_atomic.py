"""Atomic writes: one file replaced whole, or a ``step-N`` directory with a ``LATEST`` pointer.

A file is written under a hidden sibling name and ``os.replace``-d into place; a directory is
written under a hidden staging name and renamed into place, then ``LATEST`` (one line naming
it) is replaced atomically. A crash at any instant leaves either the previous file or
directory or the new one — never a half-written one. One protocol serves the published
weights, the in-process trainer's checkpoints, the loop's half of a remote-trainer checkpoint,
the trainer process's sharded checkpoints, the deck on disk and every state file of a run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LATEST = "LATEST"

# mkstemp creates 0600 files; a replaced file gets what a plain open() would have given it
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_file(target: Path, *, fsync: bool = False) -> Iterator[Path]:
    """Yield a hidden sibling path of ``target`` to write; on a clean exit it replaces
    ``target`` (``os.replace``, atomic on one filesystem), on any exception it is removed.
    ``fsync`` flushes the file to disk before the replace (pointer files)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    staging = Path(name)
    try:
        yield staging
        os.chmod(staging, 0o666 & ~_UMASK)
        if fsync:
            with staging.open("rb") as written:
                os.fsync(written.fileno())
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def atomic_write_text(target: Path, text: str, *, fsync: bool = False) -> None:
    """Replace ``target`` with ``text`` whole (:func:`atomic_file`)."""
    with atomic_file(target, fsync=fsync) as staging:
        staging.write_text(text)


@contextmanager
def staged_dir(parent: Path, name: str) -> Iterator[Path]:
    """Yield a fresh hidden directory in ``parent``; on a clean exit it replaces
    ``parent/name`` (:func:`replace_dir`), on any exception it is removed."""
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    try:
        yield staging
        replace_dir(staging, parent / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def replace_dir(staging: Path, target: Path) -> None:
    """Rename the complete ``staging`` directory to ``target``, replacing what is there: the
    old directory is renamed aside first and removed after, so ``target`` is missing only
    between two renames and never half-deleted."""
    if not target.exists():
        staging.rename(target)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    target.rename(retired / target.name)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)


def write_latest(root: Path, name: str) -> None:
    """Point ``root/LATEST`` at ``name`` (written to a temporary file, fsynced, replaced)."""
    atomic_write_text(root / LATEST, name + "\n", fsync=True)


def read_latest(root: Path) -> Path | None:
    """The directory ``root/LATEST`` names, or ``None`` when none was ever completed."""
    pointer = root / LATEST
    if not pointer.is_file():
        return None
    return root / pointer.read_text().strip()


def prune_steps(root: Path, keep: int, current: str, *, prefix: str = "step-") -> None:
    """Remove all but the newest ``keep`` ``<prefix>N`` directories (never ``current``), and
    any hidden ``.<prefix>*`` staging a crash left behind."""
    numbered = sorted(
        (
            p
            for p in root.glob(f"{prefix}*")
            if p.is_dir() and p.name.removeprefix(prefix).isdigit()
        ),
        key=lambda p: int(p.name.removeprefix(prefix)),
    )
    for old in numbered[: max(len(numbered) - keep, 0)]:
        if old.name != current:
            shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(f".{prefix}*"):
        shutil.rmtree(stale, ignore_errors=True)
