"""The ``hermes`` dialect: a strict JSON object inside the envelope.

Canonical body::

    <tool_call>
    {"name": "NAME", "arguments": {"P": "VALUE", ...}}
    </tool_call>

The body is everything up to the first ``</tool_call>`` (as in every public Hermes parser);
`render_turn` writes a literal ``</tool_call>`` inside a string as ``<\\/tool_call>``, which JSON
reads back as the same string. Strictness beyond `json.loads`: duplicate keys are rejected at
every level (``json.loads`` silently keeps the last), ``NaN``/``Infinity`` are rejected, the
object has exactly the keys ``name`` and ``arguments``, and every argument value is a string.
The raw body may not hold a variant of a reasoning tag or special-token text: the reasoning
stage in front of the Hermes parser deletes ``</think>`` and ``<|im_end|>`` from the content it
hands on (`render_turn` writes every ``<`` in a string as ``\u003c``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from swe_formatcheck._ambiguity import find_in_json
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import Dialect
from swe_formatcheck._lexer import CALL_CLOSE, CALL_OPEN, HERMES_CALL_MARKERS
from swe_formatcheck._reasoning import reasoning_block
from swe_formatcheck._scan import TurnScanner, lenient_bodies, scan_turn
from swe_formatcheck._tools import ToolCall, ToolSpec


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys were repeated."""

    duplicates: tuple[str, ...] = ()


def _object_hook(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        obj.duplicates = tuple(repeated)
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# One decoder for all calls: json.loads(..., object_pairs_hook=...) builds a new one every time.
_DECODER = json.JSONDecoder(object_pairs_hook=_object_hook, parse_constant=_reject_constant)


class HermesDialect:
    """Parser for the ``hermes`` body (see the module docstring)."""

    call_markers: tuple[str, ...] = HERMES_CALL_MARKERS

    def parse_envelope(self, scanner: TurnScanner, pos: int) -> int:
        """Parse from just after ``<tool_call>``; return the index after ``</tool_call>``."""
        at, marker = scanner.finder.find(pos, (CALL_CLOSE,))
        envelope_at = pos - len(CALL_OPEN)
        if marker is None:
            scanner.flag(Code.ENVELOPE_UNCLOSED, envelope_at, "<tool_call> never closed")
            return len(scanner.text)
        self._call(scanner, scanner.text[pos:at], envelope_at)
        scanner.flag_ambiguity(find_in_json(scanner.text, pos, at), "the JSON body")
        return at + len(marker)

    @staticmethod
    def _call(scanner: TurnScanner, body: str, offset: int) -> None:
        try:
            decoded = _DECODER.decode(body)
        except (ValueError, RecursionError) as exc:
            # ValueError covers JSONDecodeError and the int-digits limit; RecursionError is
            # what the C scanner raises on deep nesting such as a megabyte of "[".
            scanner.flag(Code.INVALID_JSON, offset, f"not JSON: {type(exc).__name__}")
            return
        if not isinstance(decoded, _Object):
            scanner.flag(Code.NON_OBJECT_JSON, offset, "the call must be a JSON object")
            return
        if decoded.duplicates:
            scanner.flag(Code.DUPLICATE_KEY, offset, f"repeated key {decoded.duplicates[0]!r}")
        name, arguments = decoded.get("name"), decoded.get("arguments")
        if set(decoded) != {"name", "arguments"} or not isinstance(name, str):
            scanner.flag(
                Code.MALFORMED_CALL, offset, 'the call must be {"name": str, "arguments": {...}}'
            )
        if "arguments" in decoded and not isinstance(arguments, _Object):
            scanner.flag(Code.NON_OBJECT_JSON, offset, "arguments must be a JSON object")
        if not isinstance(name, str):
            return
        pairs: list[tuple[str, str | None]] = []
        if isinstance(arguments, _Object):
            for key in arguments.duplicates:
                pairs.append((key, None))
            for key, value in arguments.items():
                if not isinstance(value, str):
                    scanner.flag(Code.NON_STRING_ARGUMENT, offset, f"{key!r} is not a string")
                pairs.append((key, value if isinstance(value, str) else None))
        scanner.check_call(name, pairs, offset)


def render(reasoning: str | None, call: ToolCall, *, think_prefilled: bool) -> str:
    """``<think>...</think>`` (if any), then ``<tool_call>\\n{JSON}\\n</tool_call>``."""
    head = reasoning_block(reasoning, HERMES_CALL_MARKERS, think_prefilled=think_prefilled)
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    # "<" can only occur inside a JSON string here; "\u003c" is JSON for "<", so the body reads
    # back the same while it holds no tag (no "</tool_call>" to end the envelope early, no
    # "</think>" or "<|im_end|>" for a reasoning stage to delete).
    body = body.replace("<", "\\u003c")
    return f"{head}{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


# -- the lenient reading public Hermes parsers do (Arctic-SWE §3.2)

_LENIENT = json.JSONDecoder()  # plain json: a repeated key keeps its last value


def parse_lenient(raw: str, tools: Mapping[str, ToolSpec]) -> ToolCall | None:
    """The first call a forgiving Hermes parser finds in `raw`: an unclosed ``<tool_call>``
    accepted, a bare JSON object without envelope too, text around the object ignored, a
    repeated key keeping its last value, extra keys ignored, ``arguments`` given as a JSON
    string decoded, non-string values written as JSON, unknown parameters dropped."""
    for body in lenient_bodies(raw):
        decoded = _first_object(body)
        if decoded is None:
            continue
        name, arguments = decoded.get("name"), decoded.get("arguments", {})
        if isinstance(arguments, str):
            arguments = _first_object(arguments)
        spec = tools.get(name) if isinstance(name, str) else None
        if spec is None or not isinstance(arguments, dict):
            continue
        values = {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in arguments.items()
            if key in spec.parameters
        }
        if all(key in values for key in spec.required):
            return ToolCall(spec.name, values)
    return None


def _first_object(text: str) -> dict[str, Any] | None:
    """The JSON object starting at the first ``{`` of `text`, whatever follows it (one
    attempt: linear in the text)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        decoded, _ = _LENIENT.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, dict) else None


HERMES = Dialect(
    name="hermes",
    render=render,
    check=functools.partial(scan_turn, parser=HermesDialect()),
    parse_lenient=parse_lenient,
    description='Hermes JSON: <tool_call>{"name": NAME, "arguments": {...}}</tool_call>',
)
