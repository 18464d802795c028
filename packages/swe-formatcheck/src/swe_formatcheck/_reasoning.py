"""The reasoning block both built-in dialects write, and the refusals every value shares.

A rendered turn must read back exactly (`render_turn` is the inverse of `check_turn`), so
text that a public parser would read as markup is refused here rather than written.
"""

from __future__ import annotations

from swe_formatcheck._ambiguity import Ambiguity, find_in_value
from swe_formatcheck._errors import RenderError
from swe_formatcheck._lexer import THINK_CLOSE, THINK_MARKERS, THINK_OPEN


def reasoning_block(
    reasoning: str | None, call_markers: tuple[str, ...], *, think_prefilled: bool
) -> str:
    """``<think>\\nREASONING\\n</think>\\n\\n`` (without ``<think>\\n`` when the template
    pre-filled it; ``""`` for no reasoning); `call_markers` are the dialect's markup."""
    if reasoning is None:
        if think_prefilled:
            raise RenderError("think_prefilled needs a reasoning text to close (use '')")
        return ""
    for marker in (*THINK_MARKERS, *call_markers):
        if marker in reasoning:
            raise RenderError(f"reasoning cannot contain {marker!r}")
    refuse(find_in_value(reasoning), "reasoning")
    opening = "" if think_prefilled else THINK_OPEN + "\n"
    return f"{opening}{reasoning}\n{THINK_CLOSE}\n\n"


def refuse(found: Ambiguity | None, where: str) -> None:
    """Raise `RenderError` for markup-like or special-token text found in `where`."""
    if found is not None:
        kind = "special-token text" if found.special else "a tag variant"
        raise RenderError(
            f"{where} cannot contain {kind} {found.text!r}: parsers read it as markup"
        )
