"""What the issue text itself states: the functions it names and its worked examples.

Arctic-SWE §4 asks for counterfactuals an agent could plausibly write and for strengthened checks
that follow from the issue. Both need the issue's own claims, read from its text alone (never
from the withheld tests): a call of a named function with literal arguments followed, in the
same sentence, by what it should do.

Recognised forms (backticks are ignored)::

    f(args) == VALUE            f(args) -> VALUE             f(args) → VALUE
    f(args) should return VALUE (also: must return, should be, should give, should equal)
    f(args) already returns VALUE
    f(args) should raise Error  (also: must raise)

Text between the call and the phrase is skipped up to the end of the sentence or the next call,
so "f('x') raises KeyError; it should return 5" states 5. ``VALUE`` is a Python literal (number, string,
tuple, list, dict, ``None``/``True``/``False``); arguments must be positional literals.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

import attrs

from swe_curate._ast_safe import literal_eval, parse_source

_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n\s*\n")
_VALUE_PHRASE = re.compile(
    r"(?:==|->|→|\b(?:should|must)\s+(?:return|be|give|equal|yield)\b|\balready\s+returns\b)\s*"
)
_RAISE_PHRASE = re.compile(r"\b(?:should|must)\s+raise\s+(?:an?\s+)?([A-Za-z_]\w*)")
_SCALAR = re.compile(r"-?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|True\b|False\b|None\b")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_MISSING: Any = object()
"""No literal found (``None`` is a literal an issue may state)."""


@attrs.frozen
class IssueExample:
    """``function(*args)`` should return ``value`` (``raises is None``) or raise ``raises``.

    ``args`` and ``value`` hold the ``repr`` of Python literals, as written in the issue.
    """

    function: str
    args: str
    value: str | None = None
    raises: str | None = None

    def arguments(self) -> tuple[Any, ...]:
        """The argument tuple."""
        parsed = literal_eval(self.args)
        assert isinstance(parsed, tuple)
        return parsed

    def expected(self) -> Any:
        """The stated return value (only when ``raises`` is None)."""
        return None if self.value is None else literal_eval(self.value)

    def call_source(self) -> str:
        """``function(arg, ...)`` as Python source."""
        return f"{self.function}({', '.join(repr(a) for a in self.arguments())})"


def named_functions(issue: str, candidates: Iterable[str]) -> set[str]:
    """The names among ``candidates`` that the issue mentions as whole words."""
    return {name for name in candidates if re.search(rf"(?<![\w.]){re.escape(name)}\b", issue)}


def issue_examples(issue: str, functions: Iterable[str] | None = None) -> list[IssueExample]:
    """Every example the issue states, optionally only for the named ``functions``."""
    text = issue.replace("`", "")
    wanted = None if functions is None else set(functions)
    found: list[IssueExample] = []
    for match in _CALL.finditer(text):
        name = match.group(1)
        if wanted is not None and name not in wanted:
            continue
        close = _matching(text, match.end() - 1)
        if close is None:
            continue
        args = _literal_args(text[match.end() : close])
        if args is None:
            continue
        example = _claim(name, args, text[close + 1 :])
        if example is not None and example not in found:
            found.append(example)
    return found


def _claim(name: str, args: tuple[Any, ...], after: str) -> IssueExample | None:
    """The claim that follows a call: its phrase must come before the sentence ends or another
    call starts; the stated literal itself is read from the full text (it may hold either)."""
    ends = [m.start() for m in (_SENTENCE_END.search(after), _CALL.search(after)) if m]
    sentence = after[: min(ends, default=len(after))]
    value = _VALUE_PHRASE.search(sentence)
    raised = _RAISE_PHRASE.search(sentence)
    if raised and (value is None or raised.start() < value.start()):
        return IssueExample(name, repr(args), raises=raised.group(1))
    if value is None:
        return None
    literal = _literal_at(after, value.end())
    if literal is _MISSING:
        return None
    return IssueExample(name, repr(args), value=repr(literal))


def _literal_args(source: str) -> tuple[Any, ...] | None:
    try:
        call = parse_source(f"f({source})", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or call.keywords:
        return None
    try:
        return tuple(literal_eval(arg) for arg in call.args)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _literal_at(text: str, start: int) -> Any:
    """The Python literal that starts at ``text[start]``, or ``_MISSING`` when there is none."""
    if start >= len(text):
        return _MISSING
    head = text[start]
    if head in _CLOSERS:
        close = _matching(text, start)
        source = text[start : close + 1] if close is not None else None
    elif head in "'\"":
        close = _string_end(text, start)
        source = text[start : close + 1] if close is not None else None
    else:
        scalar = _SCALAR.match(text, start)
        source = scalar.group(0) if scalar else None
    if source is None:
        return _MISSING
    try:
        return literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _string_end(text: str, start: int) -> int | None:
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return None


def _matching(text: str, start: int) -> int | None:
    """Index of the bracket closing ``text[start]`` (strings inside are skipped)."""
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char in "'\"":
            end = _string_end(text, i)
            if end is None:
                return None
            i = end + 1
            continue
        if char in _CLOSERS:
            depth += 1
        elif char in _CLOSERS.values():
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None
