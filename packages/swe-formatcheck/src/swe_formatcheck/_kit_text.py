"""Text strategies of the property-testing kit: scanner-stressing text, tag variants, special-token
text, and a slow readable oracle of what a value or reasoning text may not hold.

The oracle (`tag_variant_at`, `special_token_at`, `unambiguous`) is written apart from the
package's regular expressions on purpose: the kit's own tests check one against the other.
"""

from __future__ import annotations

import functools
from typing import Final

from hypothesis import assume
from hypothesis import strategies as st

from swe_formatcheck._lexer import THINK_MARKERS, XML_CALL_MARKERS

#: Every exact piece of markup of the qwen3_coder dialect (reasoning tags and call tags).
ALL_MARKUP: Final = (*THINK_MARKERS, *XML_CALL_MARKERS)
#: The tag names public parsers read as markup (README, "What public parsers read as markup").
TAG_NAMES: Final = ("tool_call", "function", "parameter", "think")
#: Characters vLLM's regex ``\s`` matches (Unicode White_Space), plus separators only
#: ``str.isspace`` knows; one of each kind is enough to show a whitespace class is taken whole.
SPACES: Final = (" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028", "\u3000")
#: Pieces that stress a scanner: markup near-misses, reasoning tags, newlines, NUL, surrogates.
FRAGMENTS: Final = (
    "<",
    ">",
    "</",
    "=",
    "\n",
    "\n\n",
    " ",
    "\t",
    "\r\n",
    "\x00",
    "\ud800",
    "\udfff",
    "<think>",
    "</think>",
    "<div>",
    "</div>",
    "<parameter",
    "</parameter",
    "<function >",
    "<tool_call",
    "< /Parameter >",
    "<\u3000parameter =",
    "<|im_end|>",
    "<|",
    "|>",
    "&lt;",
    '"',
    "\\",
    "{",
    "}",
    "\u00e9",
    "\U0001f600",
)


@functools.cache
def any_text(max_pieces: int = 8) -> st.SearchStrategy[str]:
    """Arbitrary text mixed with `FRAGMENTS` (markup, near-misses, NUL, lone surrogates)."""
    return st.lists(st.one_of(st.text(), st.sampled_from(FRAGMENTS)), max_size=max_pieces).map(
        "".join
    )


@functools.cache
def tool_names() -> st.SearchStrategy[str]:
    """Function and parameter names, ``^[A-Za-z0-9_-]{1,16}$``."""
    return st.from_regex(r"[A-Za-z0-9_-]{1,16}", fullmatch=True)


def _same_letter(char: str, letter: str) -> bool:
    # Broader than any case-insensitive regex engine: scrubbing too much only shrinks the space.
    return (
        letter in (char.lower(), char.lower()[:1], char.casefold())
        or char.upper() == letter.upper()
    )


def tag_variant_at(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts with ``<`` ws* [/ ws*] TAG ws* (= or >), any letter case."""
    if not text.startswith("<", at):
        return False
    pos = at + 1
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if text.startswith("/", pos):
        pos += 1
        while pos < len(text) and text[pos].isspace():
            pos += 1
    for name in TAG_NAMES:
        end = pos + len(name)
        if end <= len(text) and all(map(_same_letter, text[pos:end], name)):
            while end < len(text) and text[end].isspace():
                end += 1
            if end < len(text) and text[end] in "=>":
                return True
    return False


def special_token_at(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts with ``<|NAME|>`` (NAME: ASCII letters, digits, ``_``)."""
    if not text.startswith("<|", at):
        return False
    end = text.find("|>", at + 2)
    name = text[at + 2 : end]
    return end > at + 2 and all(char.isascii() and (char.isalnum() or char == "_") for char in name)


def unambiguous(text: str) -> bool:
    """No tag variant and no special-token text anywhere in `text` (a slow, readable oracle)."""
    return not any(tag_variant_at(text, i) or special_token_at(text, i) for i in range(len(text)))


def scrub(text: str, markers: tuple[str, ...]) -> str:
    """Cut out every marker, tag variant and special token (repeatedly: a cut can form a new one)."""
    while True:
        for marker in markers:
            text = text.replace(marker, "")
        bad = {i for i in range(len(text)) if tag_variant_at(text, i) or special_token_at(text, i)}
        if not bad and not any(marker in text for marker in markers):
            return text
        text = "".join(char for i, char in enumerate(text) if i not in bad)


@functools.cache
def text_without(markers: tuple[str, ...] = ALL_MARKUP) -> st.SearchStrategy[str]:
    """Text that holds none of `markers`, no tag variant and no special-token text.

    Each occurrence is cut out of `any_text` rather than filtered, so no example is discarded.
    Strategies are cached per argument: building one inside every draw costs hypothesis more
    than drawing from it.
    """
    return any_text().map(lambda text: scrub(text, markers))


@st.composite
def tag_variants(
    draw: st.DrawFn, names: tuple[str, ...] = TAG_NAMES, spaces: tuple[str, ...] = SPACES
) -> str:
    """``<`` ws* [/ ws*] NAME ws* (= | >) with NAME (one of `names`) in a random letter case and
    ws drawn from `spaces`; never an exact tag (those have codes of their own: ``nested_tag``,
    ``parameter_unclosed``, ...)."""
    runs = st.lists(st.sampled_from(spaces), max_size=3).map("".join)
    name = draw(st.sampled_from(names))
    cased = "".join(char.upper() if draw(st.booleans()) else char for char in name)
    slash = draw(st.sampled_from(["", "/"]))
    middle = draw(runs) + slash + (draw(runs) if slash else "")
    variant = "<" + middle + cased + draw(runs) + draw(st.sampled_from("=>"))
    assume(variant not in ALL_MARKUP)
    return variant


@functools.cache
def special_token_texts() -> st.SearchStrategy[str]:
    """Special-token text ``<|NAME|>`` such as ``<|im_end|>``, which public parsers delete."""
    return st.one_of(
        st.sampled_from(("<|im_end|>", "<|im_start|>", "<|endoftext|>")),
        st.from_regex(r"<\|[A-Za-z0-9_]{1,12}\|>", fullmatch=True),
    )
