"""Crash-safe state files: write-then-rename with fsync, a magic header and a checksum.

File layout (UTF-8)::

    deck-evictor-state v1 sha256=<64 hex> bytes=<payload length>\\n
    <payload: canonical JSON>

Write protocol: the bytes go to ``<name>.tmp`` in the same directory, are flushed and fsynced,
read back and verified, then ``os.replace``-d over the target and the directory is fsynced. A
POSIX rename is atomic, so a process killed at any instant leaves either the old complete file or
the new complete file at the target (plus, at worst, a stale ``.tmp`` that the next save
truncates). A file that fails verification is never renamed into place, and a target that is not
a deck state file is never overwritten. One writer per path is assumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from deck_evictor._errors import CorruptStateError, ForeignStateError

MAGIC = b"deck-evictor-state "
VERSION = 1
_HEADER = re.compile(rb"deck-evictor-state v(\d+) sha256=([0-9a-f]{64}) bytes=(\d+)\n")


def encode(payload: dict[str, Any]) -> bytes:
    """Header + canonical JSON (sorted keys, no whitespace) for ``payload``."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    digest = hashlib.sha256(body).hexdigest()
    return b"%sv%d sha256=%s bytes=%d\n" % (MAGIC, VERSION, digest.encode(), len(body)) + body


def decode(data: bytes, source: str = "<bytes>") -> dict[str, Any]:
    """Verify and parse a state file's bytes.

    Raises:
        ForeignStateError: no deck-evictor header, or an unsupported format version.
        CorruptStateError: header damaged, length or checksum mismatch, or payload not a JSON object.
    """
    if MAGIC.startswith(data):  # empty, or cut inside the magic: ours, truncated
        raise CorruptStateError(f"{source}: truncated to {len(data)} bytes")
    if not data.startswith(MAGIC):
        raise ForeignStateError(f"{source} is not a deck-evictor state file (no header)")
    newline = data.find(b"\n")
    match = _HEADER.fullmatch(data[: newline + 1]) if newline >= 0 else None
    if match is None:
        raise CorruptStateError(f"{source}: damaged header")
    version = int(match.group(1))
    if version != VERSION:
        raise ForeignStateError(f"{source}: format v{version}, this version reads v{VERSION}")
    body = data[newline + 1 :]
    if len(body) != int(match.group(3)):
        raise CorruptStateError(
            f"{source}: payload is {len(body)} bytes, header says {match.group(3).decode()} (truncated?)"
        )
    if hashlib.sha256(body).hexdigest().encode() != match.group(2):
        raise CorruptStateError(f"{source}: checksum mismatch")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptStateError(f"{source}: payload is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise CorruptStateError(f"{source}: payload is not a JSON object")
    return payload


def read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and verify a state file (``OSError`` such as ``FileNotFoundError`` propagates)."""
    target = Path(path)
    return decode(target.read_bytes(), str(target))


def _looks_foreign(target: Path) -> bool:
    """True when ``target`` exists and does not start with our magic (someone else's file)."""
    try:
        with target.open("rb") as handle:
            head = handle.read(len(MAGIC))
    except FileNotFoundError:
        return False
    return not MAGIC.startswith(head) if len(head) < len(MAGIC) else head != MAGIC


def write_state(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Atomically replace ``path`` with ``payload`` (see the module docstring for the protocol)."""
    target = Path(path)
    if target.is_dir():
        raise ForeignStateError(f"{target} is a directory")
    if _looks_foreign(target):
        raise ForeignStateError(f"refusing to overwrite {target}: it is not a deck state file")
    data = encode(payload)
    temp = target.with_name(target.name + ".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    decode(temp.read_bytes(), str(temp))  # never rename a file we could not read back
    os.replace(temp, target)
    _fsync_directory(target.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (the directory entry lives in the directory's data)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
