"""Unified diffs: parse, render, apply and create — strictly, in pure Python.

The offline judge needs the *patched source* of every file a gold patch touches (to mutate it
with ``ast``) and must turn a mutated tree back into a patch the sandbox can apply. Applying is
strict (every context and removed line must match; hunks may sit at an offset from their stated
line, as ``patch``/``git apply`` allow), because a counterfactual that silently applied
somewhere else would be scored as something it is not.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence

import attrs

from swe_curate._errors import CuratePatchApplyError, PatchFormatError

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
DEV_NULL = "/dev/null"


@attrs.frozen
class Hunk:
    """One ``@@`` block. ``lines`` are ``(tag, text)`` with tag in `` ``/``-``/``+`` and text
    including its line ending (missing only on a file's last line without newline)."""

    old_start: int
    new_start: int
    lines: tuple[tuple[str, str], ...]

    @property
    def old_lines(self) -> list[str]:
        return [text for tag, text in self.lines if tag in " -"]

    @property
    def new_lines(self) -> list[str]:
        return [text for tag, text in self.lines if tag in " +"]


@attrs.frozen
class FilePatch:
    """All hunks for one file. ``old_path``/``new_path`` are repo-relative or ``/dev/null``."""

    old_path: str
    new_path: str
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        """The path the file has after the patch (or before it, for a deletion)."""
        return self.old_path if self.new_path == DEV_NULL else self.new_path


def _strip_prefix(raw: str) -> str:
    name = raw.split("\t", 1)[0].strip()
    if name == DEV_NULL:
        return name
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a (git-style or plain) unified diff into per-file patches.

    Raises :class:`PatchFormatError` for anything that is not a unified diff (no file headers,
    hunk counts that disagree with the hunk body, stray lines inside a hunk).
    """
    lines = text.splitlines(keepends=True)
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- ") or i + 1 >= len(lines):
            i += 1
            continue
        if not lines[i + 1].startswith("+++ "):
            raise PatchFormatError(f"line {i + 2}: expected '+++ ' after '--- '")
        old_path = _strip_prefix(lines[i][4:])
        new_path = _strip_prefix(lines[i + 1][4:])
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _parse_hunk(lines, i)
            hunks.append(hunk)
        if not hunks:
            raise PatchFormatError(f"file {new_path!r} has no hunks")
        patches.append(FilePatch(old_path, new_path, tuple(hunks)))
    if not patches:
        raise PatchFormatError("no '--- '/'+++ ' file headers found: not a unified diff")
    return patches


def _parse_hunk(lines: Sequence[str], i: int) -> tuple[Hunk, int]:
    match = _HUNK_HEADER.match(lines[i])
    if match is None:
        raise PatchFormatError(f"line {i + 1}: malformed hunk header {lines[i].rstrip()!r}")
    old_start, new_start = int(match[1]), int(match[3])
    old_left = int(match[2]) if match[2] is not None else 1
    new_left = int(match[4]) if match[4] is not None else 1
    body: list[tuple[str, str]] = []
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise PatchFormatError("patch ends inside a hunk")
        line = lines[i]
        tag, text = (line[0], line[1:]) if line not in ("\n", "\r\n") else (" ", line)
        if tag not in " -+":
            raise PatchFormatError(f"line {i + 1}: unexpected line in hunk {line.rstrip()!r}")
        if tag in " -":
            old_left -= 1
        if tag in " +":
            new_left -= 1
        if old_left < 0 or new_left < 0:
            raise PatchFormatError(f"line {i + 1}: hunk longer than its header says")
        body.append((tag, text))
        i += 1
        if i < len(lines) and lines[i].rstrip("\r\n") == _NO_NEWLINE:
            body[-1] = (tag, text.rstrip("\r\n"))
            i += 1
    return Hunk(old_start, new_start, tuple(body)), i


def render_patch(patches: Sequence[FilePatch]) -> str:
    """Render patches back to git-style unified diff text (inverse of :func:`parse_patch`)."""
    out: list[str] = []
    for fp in patches:
        out.append(f"--- {fp.old_path if fp.old_path == DEV_NULL else 'a/' + fp.old_path}\n")
        out.append(f"+++ {fp.new_path if fp.new_path == DEV_NULL else 'b/' + fp.new_path}\n")
        for hunk in fp.hunks:
            n_old, n_new = len(hunk.old_lines), len(hunk.new_lines)
            out.append(f"@@ -{hunk.old_start},{n_old} +{hunk.new_start},{n_new} @@\n")
            for tag, text in hunk.lines:
                if text.endswith("\n"):
                    out.append(tag + text)
                else:
                    out.append(f"{tag}{text}\n{_NO_NEWLINE}\n")
    return "".join(out)


def _apply_file(old_text: str, fp: FilePatch) -> str:
    src = old_text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0  # index into src of the first line not yet copied
    offset = 0  # how far the previous hunk was found from its stated position
    for hunk in fp.hunks:
        want = hunk.old_lines
        stated = max(hunk.old_start - 1, 0) if want else hunk.old_start
        at = _locate(src, want, stated + offset, cursor)
        if at is None:
            raise CuratePatchApplyError(
                f"{fp.path}: hunk @@ -{hunk.old_start} does not match the file "
                f"(first expected line {want[0].rstrip()!r})"
                if want
                else f"{fp.path}: hunk @@ -{hunk.old_start} is out of range"
            )
        offset = at - stated
        out.extend(src[cursor:at])
        out.extend(hunk.new_lines)
        cursor = at + len(want)
    out.extend(src[cursor:])
    return "".join(out)


def _locate(src: Sequence[str], want: Sequence[str], guess: int, floor: int) -> int | None:
    """Where ``want`` occurs in ``src`` at or after ``floor``, nearest to ``guess`` first."""
    limit = len(src) - len(want)
    if not want:
        return guess if floor <= guess <= len(src) else None
    for delta in range(len(src) + 1):
        for at in (guess - delta, guess + delta) if delta else (guess,):
            if floor <= at <= limit and list(src[at : at + len(want)]) == list(want):
                return at
    return None


def apply_patch(files: Mapping[str, str], patch: str | Sequence[FilePatch]) -> dict[str, str]:
    """Apply ``patch`` to ``files`` (repo-relative path → text); return the touched files' new text.

    Files the patch deletes are absent from the result. Raises :class:`CuratePatchApplyError` when a
    file is missing or a hunk does not match, :class:`PatchFormatError` for a malformed diff.
    """
    patches = parse_patch(patch) if isinstance(patch, str) else list(patch)
    result: dict[str, str] = {}
    for fp in patches:
        if fp.old_path == DEV_NULL:
            old = ""
        elif fp.old_path in result:
            old = result[fp.old_path]
        elif fp.old_path in files:
            old = files[fp.old_path]
        else:
            raise CuratePatchApplyError(f"{fp.old_path}: file not found in the tree")
        new = _apply_file(old, fp)
        if fp.new_path != DEV_NULL:
            result[fp.new_path] = new
    return result


def make_patch(old_files: Mapping[str, str], new_files: Mapping[str, str]) -> str:
    """A git-style unified diff turning ``old_files`` into ``new_files`` (3 lines of context).

    Files present only in ``new_files`` are created; paths whose text is equal are skipped.
    """
    chunks: list[str] = []
    for path in sorted(set(old_files) | set(new_files)):
        old, new = old_files.get(path), new_files.get(path)
        if old == new:
            continue
        chunks.append(_file_diff(path, old, new))
    return "".join(chunks)


def _file_diff(path: str, old: str | None, new: str | None) -> str:
    old_lines = (old or "").splitlines(keepends=True)
    new_lines = (new or "").splitlines(keepends=True)
    body = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile=DEV_NULL if old is None else f"a/{path}",
            tofile=DEV_NULL if new is None else f"b/{path}",
        )
    )
    out: list[str] = []
    for line in body:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(f"{line}\n{_NO_NEWLINE}\n")
    return "".join(out)


def touched_paths(patch: str) -> list[str]:
    """Repo-relative paths a patch reads (its pre-image files; created files excluded)."""
    return [fp.old_path for fp in parse_patch(patch) if fp.old_path != DEV_NULL]


def drop_hunk(patch: str, index: int) -> str:
    """The same patch without its ``index``-th hunk (counted across files, in order).

    Later hunks of the same file keep their old positions; the applier finds them by content
    at the shifted offset, and we recompute ``new_start`` so the header stays consistent.
    """
    patches = parse_patch(patch)
    kept: list[FilePatch] = []
    seen = 0
    for fp in patches:
        hunks: list[Hunk] = []
        shift = 0
        for hunk in fp.hunks:
            if seen == index:
                seen += 1
                continue
            seen += 1
            hunks.append(attrs.evolve(hunk, new_start=hunk.old_start + shift))
            shift += len(hunk.new_lines) - len(hunk.old_lines)
        if hunks:
            kept.append(attrs.evolve(fp, hunks=tuple(hunks)))
    if seen <= index:
        raise PatchFormatError(f"patch has {seen} hunks, cannot drop hunk {index}")
    return render_patch(kept)


def count_hunks(patch: str) -> int:
    """Number of hunks across all files."""
    return sum(len(fp.hunks) for fp in parse_patch(patch))
