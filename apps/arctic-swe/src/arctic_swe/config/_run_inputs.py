"""What a run trained from: ``RUN/inputs.json``, the content digests of its deck and its
warm-start policy.

Two stress-test runs are comparable only when they start from the same deck and the same warm
start (Arctic-SWE §3.1: the variants differ by one switch, nothing else). The directories are
rebuilt from seeds on each machine, and a rebuilt warm start is not guaranteed to be the same
bytes on another machine, so a path says nothing; a SHA-256 over every file of the directory
does. ``arctic-swe compare`` prints the digests of each run and whether the runs share them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path

import attrs

from arctic_swe._atomic import atomic_write_text
from arctic_swe.config._errors import RunDirError
from arctic_swe.config._rundir import RunDir

INPUTS_FILE = "inputs.json"
_CHUNK = 1 << 20


#: Files of a warm-start directory that are logs, not the policy: the expert trajectories
#: record their wall times, so two identical warm starts never have identical logs.
POLICY_LOGS = ("*.jsonl",)


def directory_digest(root: Path, skip: tuple[str, ...] = ()) -> str:
    """SHA-256 over every regular file under ``root`` whose relative path matches none of the
    ``skip`` patterns (``fnmatch``): its relative path and its bytes, in path order (so the
    digest does not depend on the file system's listing order).

    Raises :class:`RunDirError` when ``root`` is not a directory.
    """
    if not root.is_dir():
        raise RunDirError(f"{root} is not a directory: cannot fingerprint it")
    digest = hashlib.sha256()
    files = (p for p in root.rglob("*") if p.is_file())
    kept = (p for p in files if not any(fnmatch(p.relative_to(root).as_posix(), s) for s in skip))
    for path in sorted(kept):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        _feed(digest, path)
        digest.update(b"\0")
    return digest.hexdigest()


def _feed(digest: hashlib._Hash, path: Path) -> None:
    """Add a file's bytes to ``digest``, a chunk at a time (weights can be large)."""
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)


def content_digest(path: Path, skip: tuple[str, ...] = ()) -> str:
    """:func:`directory_digest` of a directory, SHA-256 of a file's bytes (a ``deck.source``
    file of task rows). Raises :class:`RunDirError` for a path that is neither."""
    if path.is_file():
        digest = hashlib.sha256()
        _feed(digest, path)
        return digest.hexdigest()
    if not path.is_dir():
        raise RunDirError(f"{path} is neither a file nor a directory: cannot fingerprint it")
    return directory_digest(path, skip)


def _sha256(_instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or len(value) != 64 or set(value) - set("0123456789abcdef"):
        raise ValueError(f"{attribute.name} must be 64 lowercase hex digits, got {value!r}")


@attrs.frozen
class RunInputs:
    """The deck and warm start a run started from: their paths as given and their
    :func:`content_digest`. ``deck`` is the deck directory, or the ``deck.source`` file of task
    rows when the pool came from one."""

    deck: str
    deck_sha256: str = attrs.field(validator=_sha256)
    policy: str
    policy_sha256: str = attrs.field(validator=_sha256)

    def short(self) -> str:
        """``deck 1a2b3c4d5e6f, warm start 7a8b9c0d1e2f`` (the digests' first 12 digits)."""
        return f"deck {self.deck_sha256[:12]}, warm start {self.policy_sha256[:12]}"

    def same_content(self, other: RunInputs) -> bool:
        """Both digests equal (wherever the directories are)."""
        return (self.deck_sha256, self.policy_sha256) == (other.deck_sha256, other.policy_sha256)


def fingerprint_inputs(deck: Path, policy_dir: Path) -> RunInputs:
    """The record of ``deck`` (a deck directory, every file; or a file of task rows) and
    ``policy_dir`` (every file but the :data:`POLICY_LOGS`: weights, configuration, tokenizer)
    as they are now."""
    return RunInputs(
        deck=str(deck),
        deck_sha256=content_digest(deck),
        policy=str(policy_dir),
        policy_sha256=directory_digest(policy_dir, skip=POLICY_LOGS),
    )


def inputs_summary(records: Mapping[str, RunInputs | None]) -> str:
    """One line on whether the runs (name -> its record, ``None`` where a run has none) started
    from the same deck and warm start: only then do their differences come from their
    configurations alone."""
    missing = [name for name, record in records.items() if record is None]
    if missing:
        return f"inputs: not recorded for {', '.join(missing)} (runs started before inputs.json)"
    found = [record for record in records.values() if record is not None]
    if all(record.same_content(found[0]) for record in found):
        return f"inputs: every run started from the same content ({found[0].short()})"
    return "inputs DIFFER: " + "; ".join(
        f"{name}: {record.short()}" for name, record in records.items() if record is not None
    )


def write_run_inputs(run: RunDir, inputs: RunInputs) -> None:
    """Write ``RUN/inputs.json`` atomically."""
    text = json.dumps(attrs.asdict(inputs), sort_keys=True) + "\n"
    atomic_write_text(run.root / INPUTS_FILE, text, fsync=True)


def read_run_inputs(run: RunDir) -> RunInputs | None:
    """The recorded inputs of ``run``, or ``None`` for a run without the record (started
    before it existed). Raises :class:`RunDirError` for a file that is not such a record."""
    path = run.root / INPUTS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return RunInputs(
            deck=str(data["deck"]),
            deck_sha256=data["deck_sha256"],
            policy=str(data["policy"]),
            policy_sha256=data["policy_sha256"],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path} is not a run inputs record: {exc}") from exc
