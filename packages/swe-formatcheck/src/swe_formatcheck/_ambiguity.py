"""Text that a public parser would read as markup although this package reads it as plain text.

`check_turn` ends a value at the first *exact* ``</parameter>`` and a reasoning block at the
first exact ``</think>``. Public parsers are looser (README, "What public parsers read as
markup"): vLLM's Qwen3 argument regex ends a value at ``<\\s*/\\s*parameter\\s*>`` and at
``<\\s*parameter\\s*=``, its reasoning stage drops every ``</think>`` after the reasoning block
and every special token of the tokenizer (``<|im_end|>``, ...) from the text. A value or
reasoning text that holds such a string is split or shortened there, so the executed call would
differ from the checked one. This module finds those strings, derived from the parsers'
patterns with a margin:

* ``MARKUP_LIKE``: ``<``, whitespace, an optional ``/`` and whitespace, a tag name, whitespace,
  then ``=`` or ``>``; any letter case. Whitespace is every character ``str.isspace`` accepts,
  a superset of the ``\\s`` of the ``regex`` module vLLM matches with. The parsers' patterns
  are case-sensitive and most allow no whitespace; rejecting every such variant keeps one rule
  that covers all of them (and parsers not yet checked) for the price of refusing values that
  hold text like ``<PARAMETER=``.
* ``SPECIAL_TOKEN_LIKE``: ``<|NAME|>`` with an ASCII word ``NAME``, the form of every Qwen
  special token; vLLM deletes the tokenizer's special tokens wherever they appear.

Both patterns use possessive quantifiers, so a megabyte of ``<`` and whitespace is scanned in
linear time.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

#: Tag names of the qwen3_coder call markup and of the reasoning block.
CALL_TAG_NAMES: Final = ("tool_call", "function", "parameter")
THINK_TAG_NAMES: Final = ("think",)
ALL_TAG_NAMES: Final = (*CALL_TAG_NAMES, *THINK_TAG_NAMES)


def markup_like(names: tuple[str, ...]) -> re.Pattern[str]:
    """The pattern of every whitespace and case variant of an opening or closing tag in `names`.

    Matches ``<`` ws* [``/`` ws*] NAME ws* (``=`` | ``>``), ``NAME`` in any letter case.
    """
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"<\s*+(?:/\s*+)?(?:{alternatives})\s*+[=>]", re.IGNORECASE)


SPECIAL_TOKEN_LIKE: Final = re.compile(r"<\|\w++\|>", re.ASCII)

_VALUE_MARKUP: Final = markup_like(ALL_TAG_NAMES)
_THINK_MARKUP: Final = markup_like(THINK_TAG_NAMES)


@attrs.frozen
class Ambiguity:
    """Where and what: the first markup-like string found in a span.

    Attributes:
        at: index of its ``<`` in the scanned text.
        text: the string itself (``"</ parameter>"``, ``"<|im_end|>"``).
        special: special-token text (deleted by parsers) rather than a tag variant.
    """

    at: int
    text: str
    special: bool

    def describe(self, where: str) -> str:
        """A one-line explanation, fit to show the model as feedback."""
        if self.special:
            return f"{where} holds special-token text {self.text!r}, which parsers delete"
        return f"{where} holds {self.text!r}, which parsers read as a tag"


def _first(text: str, start: int, end: int, *, think_only: bool) -> Ambiguity | None:
    pattern = _THINK_MARKUP if think_only else _VALUE_MARKUP
    found = [
        match
        for match in (pattern.search(text, start, end), SPECIAL_TOKEN_LIKE.search(text, start, end))
        if match is not None
    ]
    if not found:
        return None
    match = min(found, key=lambda m: m.start())
    return Ambiguity(match.start(), match.group(), match.re is SPECIAL_TOKEN_LIKE)


def find_in_value(text: str, start: int = 0, end: int | None = None) -> Ambiguity | None:
    """The first tag variant (call or reasoning tag) or special-token text in ``text[start:end]``.

    Used for qwen3_coder values and for reasoning text: the parsers that read them know every
    tag name.
    """
    return _first(text, start, len(text) if end is None else end, think_only=False)


def find_in_json(text: str, start: int = 0, end: int | None = None) -> Ambiguity | None:
    """The first reasoning-tag variant or special-token text in a raw hermes JSON body.

    The Hermes parser itself only knows ``<tool_call>``/``</tool_call>`` (the body already ends
    at the first ``</tool_call>``); the reasoning stage before it knows the reasoning tags and
    the special tokens.
    """
    return _first(text, start, len(text) if end is None else end, think_only=True)
