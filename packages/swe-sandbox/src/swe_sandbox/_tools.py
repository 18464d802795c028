"""Pure logic of the Mini-SWE-Agent-Plus tools: path confinement and exact string replacement."""

from __future__ import annotations

import posixpath

from swe_sandbox._backend import WORKDIR
from swe_sandbox._errors import PathEscapeError, StrReplaceError


def confine(path: str, workdir: str = WORKDIR) -> str:
    """Return the absolute, normalised form of `path` inside `workdir`, or raise.

    Relative paths are taken from `workdir`. ``..`` that climbs out, absolute paths elsewhere
    and NUL bytes are refused. (Symlinks are resolved inside the sandbox by the caller.)
    """
    if not path or "\x00" in path:
        raise PathEscapeError(f"invalid path {path!r}")
    joined = path if path.startswith("/") else posixpath.join(workdir, path)
    normal = posixpath.normpath(joined)
    if normal != workdir and not normal.startswith(workdir.rstrip("/") + "/"):
        raise PathEscapeError(f"path {path!r} is outside {workdir}")
    return normal


def line_of(text: str, offset: int) -> int:
    """1-based line number of character `offset` in `text`."""
    return text.count("\n", 0, offset) + 1


def match_offsets(text: str, needle: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence of `needle` in `text`."""
    offsets: list[int] = []
    start = text.find(needle)
    while start != -1:
        offsets.append(start)
        start = text.find(needle, start + 1)
    return offsets


def str_replace(text: str, old_str: str, new_str: str, *, path: str) -> tuple[str, int]:
    """Replace the single occurrence of `old_str`; return (new text, line of the edit).

    Raises `StrReplaceError` naming the problem: empty `old_str`, no match, or several matches
    with the line numbers of each (overlapping matches count: the edit would be ambiguous).
    """
    if old_str == "":
        raise StrReplaceError(f"{path}: old_str is empty; give the exact text to replace")
    offsets = match_offsets(text, old_str)
    if not offsets:
        raise StrReplaceError(f"{path}: old_str not found; no replacement made")
    if len(offsets) > 1:
        lines = sorted({line_of(text, o) for o in offsets})
        raise StrReplaceError(
            f"{path}: old_str occurs {len(offsets)} times (lines {', '.join(map(str, lines))}); "
            "include more context to make it unique; no replacement made"
        )
    start = offsets[0]
    return text[:start] + new_str + text[start + len(old_str) :], line_of(text, start)


def snippet(text: str, line: int, *, context: int = 3) -> str:
    """Numbered lines around `line`, as the tool's observation."""
    lines = text.split("\n")
    lo, hi = max(1, line - context), min(len(lines), line + context)
    return "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(lo, hi + 1))
