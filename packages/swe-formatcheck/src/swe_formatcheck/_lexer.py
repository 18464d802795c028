"""Markers of the turn format and a linear-time finder for the next one.

Why not regular expressions: a pattern such as ``<parameter=(.*?)</parameter>`` rescans the
rest of the text for every opening tag, which turns 1 MB of repeated openers into a quadratic
scan. `MarkerFinder` instead remembers, per marker, the position of its next occurrence and
only searches again (with `str.find`, in C) once the cursor has moved past it. The cursor only
moves forward, so each marker's text is scanned about once: O(len(text) x len(markers)).
"""

from __future__ import annotations

from collections.abc import Iterable

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
FUNC_OPEN = "<function="
FUNC_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"

THINK_MARKERS = (THINK_OPEN, THINK_CLOSE)
#: Every piece of qwen3_coder call markup. None of them may appear inside a value.
XML_CALL_MARKERS = (CALL_OPEN, CALL_CLOSE, FUNC_OPEN, FUNC_CLOSE, PARAM_OPEN, PARAM_CLOSE)
#: The hermes dialect has only the envelope as markup; the rest is JSON.
HERMES_CALL_MARKERS = (CALL_OPEN, CALL_CLOSE)

#: The whitespace allowed around the turn and between structural tags. ASCII only on purpose:
#: ``str.isspace`` also accepts e.g. U+001C..U+001F and U+3000, which no template ever writes.
WHITESPACE = " \t\n\r"

#: Longest ``NAME`` looked at in ``<function=NAME>`` / ``<parameter=NAME>``. Bounding the search
#: for ``>`` keeps a megabyte of ``<parameter=`` without ``>`` linear.
TAG_NAME_SCAN = 256


class MarkerFinder:
    """Finds the next marker at or after a cursor that never moves backwards."""

    __slots__ = ("_next", "_text")

    def __init__(self, text: str, markers: Iterable[str]) -> None:
        self._text = text
        # -1: not searched yet; len(text) + 1: no further occurrence.
        self._next = dict.fromkeys(markers, -1)

    def find(self, pos: int, markers: tuple[str, ...]) -> tuple[int, str | None]:
        """Return ``(index, marker)`` of the first of `markers` at or after `pos`.

        When none occurs, return ``(len(text), None)``. Ties cannot happen: no marker is a
        prefix of another.
        """
        best_at = len(self._text)
        best: str | None = None
        cache = self._next
        for marker in markers:
            at = cache[marker]
            if at < pos:
                found = self._text.find(marker, pos)
                at = found if found >= 0 else len(self._text) + 1
                cache[marker] = at
            if at < best_at:
                best_at, best = at, marker
        return best_at, best


def read_tag_name(text: str, pos: int) -> tuple[str | None, int]:
    """Read ``NAME>`` at `pos` (just after ``<function=`` or ``<parameter=``).

    Returns ``(name, index after ">")``, or ``(None, pos)`` when there is no ``>`` within
    `TAG_NAME_SCAN` characters or the name is empty or holds whitespace or ``<``.
    """
    end = text.find(">", pos, pos + TAG_NAME_SCAN + 1)
    if end < 0:
        return None, pos
    name = text[pos:end]
    # split() == [name] is "no whitespace at all", tested in C rather than per character.
    if "<" in name or name.split() != [name]:
        return None, end + 1
    return name, end + 1
