"""The dialect-independent layers of a turn: reasoning block, envelope placement, call count.

Grammar of a valid turn (``ws`` is any whitespace)::

    turn      := ws* [reasoning ws*] envelope ws*
    reasoning := "<think>" TEXT "</think>"      (the "<think>" is absent from raw when pre-filled)
    envelope  := "<tool_call>" BODY "</tool_call>"   (BODY is dialect-specific)

The dialect module parses BODY and reports the call through `TurnScanner.check_call`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from swe_formatcheck._ambiguity import Ambiguity, find_in_value
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import ReasoningMode
from swe_formatcheck._lexer import (
    CALL_OPEN,
    THINK_CLOSE,
    THINK_MARKERS,
    THINK_OPEN,
    WHITESPACE,
    MarkerFinder,
)
from swe_formatcheck._tools import ToolCall, ToolSpec
from swe_formatcheck._verdict import TurnVerdict, Violation

_LENIENT_ENVELOPE = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)$", re.DOTALL)


class EnvelopeParser(Protocol):
    """How a built-in dialect parses the inside of ``<tool_call>...</tool_call>``."""

    #: The call markup of the dialect, flagged when it appears inside reasoning.
    call_markers: tuple[str, ...]

    def parse_envelope(self, scanner: TurnScanner, pos: int) -> int:
        """Parse from just after ``<tool_call>``; return the index after ``</tool_call>``."""
        ...


class TurnScanner:
    """One pass over one raw turn, collecting violations and the first call."""

    def __init__(self, text: str, dialect: EnvelopeParser, tools: Mapping[str, ToolSpec]) -> None:
        self.text = text
        self.dialect = dialect
        self.tools = tools
        self.finder = MarkerFinder(text, (*dialect.call_markers, *THINK_MARKERS))
        self._violations: dict[Code, Violation] = {}
        self.call: tuple[str, dict[str, str]] | None = None
        self.reasoning: str | None = None
        self._top_markers = (*THINK_MARKERS, *dialect.call_markers)
        self._reasoning_markers = self._top_markers

    # -- bookkeeping

    def flag(self, code: Code, offset: int, detail: str) -> None:
        """Record a violation; only the first occurrence of each code is kept."""
        if code not in self._violations:
            self._violations[code] = Violation(code, offset, detail)

    def flag_ambiguity(self, found: Ambiguity | None, where: str) -> None:
        """Flag markup-like or special-token text found inside a value, body or reasoning."""
        if found is not None:
            code = Code.SPECIAL_TOKEN_TEXT if found.special else Code.AMBIGUOUS_MARKUP
            self.flag(code, found.at, found.describe(where))

    @property
    def violations(self) -> tuple[Violation, ...]:
        """The violations found so far, in the order first found."""
        return tuple(self._violations.values())

    def check_call(
        self, name: str | None, pairs: list[tuple[str, str | None]], offset: int
    ) -> None:
        """Check one parsed call against the tools; the first call checked becomes `call`.

        `pairs` are the parameters in order; a value of ``None`` means it could not be read
        (its violation is already flagged) but its name still counts for duplicate checks.
        """
        spec = self.tools.get(name) if name is not None else None
        if name is not None and spec is None:
            self.flag(Code.UNKNOWN_FUNCTION, offset, f"no tool named {name!r}")
        arguments: dict[str, str] = {}
        seen: set[str] = set()
        for param, value in pairs:
            if param in seen:
                self.flag(Code.DUPLICATE_PARAMETER, offset, f"parameter {param!r} given twice")
            seen.add(param)
            if spec is not None and param not in spec.parameters:
                self.flag(Code.UNKNOWN_PARAMETER, offset, f"{name} has no parameter {param!r}")
            if value is not None:
                arguments.setdefault(param, value)
        if spec is not None:
            missing = [param for param in spec.required if param not in seen]
            if missing:
                self.flag(Code.MISSING_PARAMETER, offset, f"{name} needs {', '.join(missing)}")
        if self.call is None and name is not None:
            self.call = (name, arguments)

    # -- the layers

    def run(self, *, think_prefilled: bool) -> None:
        """Scan the whole turn (the caller has already ruled out an empty one)."""
        pos = 0
        if think_prefilled:
            pos, body = self._consume_reasoning(0)
            self.reasoning = body[:-1] if body.endswith("\n") else body
        else:
            start = len(self.text) - len(self.text.lstrip(WHITESPACE))
            if self.text.startswith(THINK_OPEN, start):
                pos, body = self._consume_reasoning(start + len(THINK_OPEN))
                self.reasoning = strip_one_newline(body)
        self._top_level(pos)

    def _consume_reasoning(self, pos: int) -> tuple[int, str]:
        """Read a reasoning body from `pos`; return (index after ``</think>``, body)."""
        start = pos
        clean = True  # no exact tag inside so far (those have codes of their own)
        while True:
            at, marker = self.finder.find(pos, self._reasoning_markers)
            if marker is None:
                self.flag(Code.REASONING_UNCLOSED, start, "<think> is never closed by </think>")
                return len(self.text), self.text[start:]
            if marker == THINK_CLOSE:
                if clean:
                    self.flag_ambiguity(find_in_value(self.text, start, at), "the reasoning")
                return at + len(marker), self.text[start:at]
            clean = False
            if marker == THINK_OPEN:
                self.flag(Code.REASONING_DUPLICATE, at, "<think> inside a reasoning block")
            else:
                self.flag(Code.CALL_IN_REASONING, at, f"{marker} inside a reasoning block")
            pos = at + len(marker)

    def _top_level(self, pos: int) -> None:
        envelopes = 0
        text_seen = False
        while True:
            at, marker = self.finder.find(pos, self._top_markers)
            if (text_at := first_text(self.text, pos, at)) >= 0:
                text_seen = True
                code = Code.TEXT_AFTER_CALL if envelopes else Code.TEXT_BEFORE_CALL
                self.flag(code, text_at, f"text {'after' if envelopes else 'before'} the tool call")
            if marker is None:
                break
            after = at + len(marker)
            if marker == CALL_OPEN:
                envelopes += 1
                if envelopes == 2:
                    self.flag(Code.MULTIPLE_CALLS, at, "a second <tool_call>")
                pos = self.dialect.parse_envelope(self, after)
            elif marker == THINK_OPEN:
                fresh = self.reasoning is not None and not envelopes and not text_seen
                if fresh:
                    self.flag(Code.REASONING_DUPLICATE, at, "a second reasoning block")
                else:
                    self.flag(Code.REASONING_MISPLACED, at, "<think> after text or the call")
                pos, _ = self._consume_reasoning(after)
            else:
                self.flag(Code.STRAY_TAG, at, f"{marker} outside a tool-call envelope")
                pos = after
        if not envelopes:
            self.flag(Code.NO_CALL, len(self.text), "no <tool_call> outside reasoning")


def scan_turn(
    raw: str,
    parser: EnvelopeParser,
    *,
    tools: Mapping[str, ToolSpec],
    reasoning: ReasoningMode,
    stopped: bool,
    think_prefilled: bool,
) -> TurnVerdict:
    """The strict verdict on `raw` with the envelope body read by `parser`: the `check` of
    both built-in dialects (`swe_formatcheck.Dialect`)."""
    if not raw.strip(WHITESPACE):
        empty = [Violation(Code.EMPTY_TURN, 0, "the turn is empty")]
        if not stopped:
            empty.append(Violation(Code.TRUNCATED, len(raw), "cut off before the stop token"))
        return TurnVerdict(tuple(empty), None, None)
    scanner = TurnScanner(raw, parser, tools)
    if not stopped:
        scanner.flag(Code.TRUNCATED, len(raw), "generation was cut off before the stop token")
    scanner.run(think_prefilled=think_prefilled)
    has_reasoning = scanner.reasoning is not None
    if reasoning == "required" and not has_reasoning:
        scanner.flag(Code.REASONING_MISSING, 0, "the turn must open with <think>...</think>")
    elif reasoning == "forbidden" and has_reasoning:
        scanner.flag(Code.REASONING_FORBIDDEN, 0, "reasoning blocks are not allowed here")
    violations = scanner.violations
    call = None
    if not violations and scanner.call is not None:
        call = ToolCall(scanner.call[0], scanner.call[1])
    return TurnVerdict(violations, call, scanner.reasoning)


def first_text(text: str, start: int, end: int) -> int:
    """Index of the first non-whitespace character of ``text[start:end]``, or -1 if none."""
    if start >= end:
        return -1
    segment = text[start:end]
    rest = segment.lstrip(WHITESPACE)
    return start + len(segment) - len(rest) if rest else -1


def lenient_bodies(raw: str) -> list[str]:
    """The envelope bodies a forgiving public parser reads (non-greedy, an unclosed last
    ``<tool_call>`` running to the end), or the whole text when there is no envelope."""
    return [closed or unclosed for closed, unclosed in _LENIENT_ENVELOPE.findall(raw)] or [raw]


def strip_one_newline(body: str) -> str:
    """Remove the one canonical newline on each side, if present."""
    if body.startswith("\n"):
        body = body[1:]
    if body.endswith("\n"):
        body = body[:-1]
    return body
