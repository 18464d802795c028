"""Atomic ``step-N`` directories under one root, with a ``LATEST`` pointer.

One protocol serves the in-process trainer's checkpoints, the loop's half of a remote-trainer
checkpoint, the trainer process's sharded checkpoints and the deck on disk: a directory is
written under a hidden staging name and renamed into place, then ``LATEST`` (one line naming
it) is replaced atomically, so a crash at any instant leaves either the previous directory or
the new one named — never a half-written one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LATEST = "LATEST"


@contextmanager
def staged_dir(parent: Path, name: str) -> Iterator[Path]:
    """Yield a fresh hidden directory in ``parent``; on a clean exit it replaces
    ``parent/name`` (rename, atomic on one filesystem), on any exception it is removed."""
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    try:
        yield staging
        publish(staging, parent / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def publish(staging: Path, target: Path) -> None:
    """Rename the complete ``staging`` directory to ``target``, replacing what is there."""
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


def write_text_atomic(target: Path, text: str) -> None:
    """Replace the file ``target`` by ``text`` atomically: written beside it under a hidden
    name, fsynced, renamed over it; a crash leaves the old file or the new one, never half."""
    fd, staging = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staging, target)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def write_latest(root: Path, name: str) -> None:
    """Point ``root/LATEST`` at ``name`` (written to a temporary file, fsynced, replaced)."""
    fd, staging = tempfile.mkstemp(prefix=".LATEST.", dir=root)
    with os.fdopen(fd, "w") as handle:
        handle.write(name + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, root / LATEST)


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
