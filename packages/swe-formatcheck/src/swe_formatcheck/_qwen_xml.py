"""The ``qwen3_coder`` dialect: the XML-ish call body of Qwen3-Coder / Qwen3.5.

Canonical body (what the Qwen chat template renders and the model emits)::

    <tool_call>
    <function=NAME>
    <parameter=P>
    VALUE
    </parameter>
    </function>
    </tool_call>

Values are exact: the body of a parameter is everything between ``<parameter=P>`` and the first
``</parameter>``, minus exactly one ``\\n`` right after the opening tag and one right before the
closing tag (both must be there). Nothing else is stripped, so indentation, inner and trailing
blank lines, trailing spaces and any ``<``/``>`` text survive. The six call-markup strings cannot
appear in a value: public parsers (vLLM's ``qwen3_coder``, SGLang's) end the value, function or
envelope at them, so accepting them would let the executed call differ from the checked one.
Nor can any whitespace or case variant of a call or reasoning tag, or special-token text
(`swe_formatcheck._ambiguity`): vLLM's argument regex ends a value at ``</ parameter>`` and
its reasoning stage deletes ``</think>`` and ``<|im_end|>`` from the text after reasoning.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from swe_formatcheck._ambiguity import find_in_value
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import Dialect
from swe_formatcheck._errors import RenderError
from swe_formatcheck._lexer import (
    CALL_CLOSE,
    CALL_OPEN,
    FUNC_CLOSE,
    FUNC_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
    TAG_NAME_SCAN,
    THINK_MARKERS,
    XML_CALL_MARKERS,
    read_tag_name,
)
from swe_formatcheck._reasoning import reasoning_block, refuse
from swe_formatcheck._scan import (
    TurnScanner,
    first_text,
    lenient_bodies,
    scan_turn,
    strip_one_newline,
)
from swe_formatcheck._tools import ToolCall, ToolSpec

_ALL_MARKERS = (*XML_CALL_MARKERS, *THINK_MARKERS)


class _Function:
    """One ``<function=NAME>`` being read: its name and parameters in order."""

    __slots__ = ("name", "offset", "pairs")

    def __init__(self, name: str | None, offset: int) -> None:
        self.name = name
        self.offset = offset
        self.pairs: list[tuple[str, str | None]] = []


class QwenXmlDialect:
    """Parser for the ``qwen3_coder`` body (see the module docstring for the grammar)."""

    call_markers: tuple[str, ...] = XML_CALL_MARKERS

    def parse_envelope(self, scanner: TurnScanner, pos: int) -> int:
        """Parse from just after ``<tool_call>``; return the index after ``</tool_call>``."""
        text = scanner.text
        envelope_at = pos - len(CALL_OPEN)
        function: _Function | None = None  # the open <function=...>, if any
        functions = 0
        while True:
            at, marker = scanner.finder.find(pos, _ALL_MARKERS)
            if (text_at := first_text(text, pos, at)) >= 0:
                scanner.flag(Code.STRAY_TEXT, text_at, "text in the envelope outside any value")
            if marker is None:
                if function is not None:
                    self._end_function(scanner, function, closed=False)
                scanner.flag(Code.ENVELOPE_UNCLOSED, envelope_at, "<tool_call> never closed")
                return len(text)
            after = at + len(marker)
            if marker == CALL_CLOSE:
                if function is not None:
                    self._end_function(scanner, function, closed=False)
                elif not functions:
                    scanner.flag(Code.FUNCTION_MISSING, at, "envelope without <function=NAME>")
                return after
            if function is not None:
                if marker == PARAM_OPEN:
                    pos = self._parameter(scanner, function, at, after)
                    continue
                if marker == FUNC_CLOSE:
                    self._end_function(scanner, function, closed=True)
                    function, pos = None, after
                    continue
            elif marker == FUNC_OPEN:
                functions += 1
                if functions == 2:
                    scanner.flag(Code.MULTIPLE_CALLS, at, "a second <function=...> in the call")
                name, pos = self._tag_name(scanner, at, after)
                function = _Function(name, at)
                continue
            pos = self._misplaced(scanner, marker, at, after)

    @staticmethod
    def _tag_name(scanner: TurnScanner, at: int, after: int) -> tuple[str | None, int]:
        name, pos = read_tag_name(scanner.text, after)
        if name is None:
            scanner.flag(Code.MALFORMED_TAG, at, "tag name missing, blank or not closed by >")
        return name, pos

    @staticmethod
    def _misplaced(scanner: TurnScanner, marker: str, at: int, after: int) -> int:
        """A marker that is not allowed where it stands; return where to resume."""
        if marker in THINK_MARKERS:
            scanner.flag(Code.REASONING_MISPLACED, at, f"{marker} inside the tool-call envelope")
        elif marker in (CALL_OPEN, FUNC_OPEN):
            scanner.flag(Code.NESTED_TAG, at, f"{marker} inside an open element")
        else:
            scanner.flag(Code.STRAY_TAG, at, f"{marker} where nothing open can take it")
        if marker == FUNC_OPEN:
            _, after = read_tag_name(scanner.text, after)
        return after

    def _parameter(self, scanner: TurnScanner, function: _Function, at: int, after: int) -> int:
        """Read one parameter from just after ``<parameter=``; return where to resume."""
        text = scanner.text
        name, pos = self._tag_name(scanner, at, after)
        body_start = pos
        nested = False
        while True:
            # Exact reasoning tags are not markers here; `find_in_value` rejects them below.
            close_at, marker = scanner.finder.find(pos, XML_CALL_MARKERS)
            if marker == PARAM_CLOSE:
                body = text[body_start:close_at]
                value: str | None = _exact_value(scanner, body, at)
                if not nested:
                    where = f"the value of {name!r}" if name else "a value"
                    scanner.flag_ambiguity(find_in_value(text, body_start, close_at), where)
                pos = close_at + len(marker)
                break
            if marker in (CALL_OPEN, FUNC_OPEN):
                scanner.flag(Code.NESTED_TAG, close_at, f"{marker} inside a parameter value")
                nested = True
                pos = close_at + len(marker)
                continue
            # </function>, </tool_call>, <parameter= or the end: the value was never closed.
            scanner.flag(Code.PARAMETER_UNCLOSED, at, "<parameter=...> never closed")
            value, pos = None, close_at
            break
        if name is not None:
            function.pairs.append((name, value))
        return pos

    @staticmethod
    def _end_function(scanner: TurnScanner, function: _Function, *, closed: bool) -> None:
        if not closed:
            scanner.flag(Code.FUNCTION_UNCLOSED, function.offset, "<function=...> never closed")
        scanner.check_call(function.name, function.pairs, function.offset)


def _exact_value(scanner: TurnScanner, body: str, at: int) -> str:
    """Strip the one canonical newline on each side; flag a body without them."""
    if len(body) >= 2 and body[0] == "\n" and body[-1] == "\n":
        return body[1:-1]
    scanner.flag(
        Code.MALFORMED_PARAMETER, at, "a value must start and end with one newline (canonical)"
    )
    return body


# -- rendering: the canonical form the strict parser above accepts


def render(reasoning: str | None, call: ToolCall, *, think_prefilled: bool) -> str:
    """``<think>...</think>`` (if any), then the canonical XML call (module docstring)."""
    head = reasoning_block(reasoning, XML_CALL_MARKERS, think_prefilled=think_prefilled)
    parts = [f"{CALL_OPEN}\n{FUNC_OPEN}{_xml_name('function', call.name)}>\n"]
    for param, value in call.arguments.items():
        for marker in XML_CALL_MARKERS:
            if marker in value:
                raise RenderError(f"value of {param!r} cannot contain {marker!r}")
        refuse(find_in_value(value), f"value of {param!r}")
        parts.append(f"{PARAM_OPEN}{_xml_name('parameter', param)}>\n{value}\n{PARAM_CLOSE}\n")
    parts.append(f"{FUNC_CLOSE}\n{CALL_CLOSE}")
    return head + "".join(parts)


def _xml_name(kind: str, name: str) -> str:
    if (
        not name
        or len(name) > TAG_NAME_SCAN
        or "<" in name
        or ">" in name
        or any(char.isspace() for char in name)
    ):
        raise RenderError(f"{kind} name {name!r} cannot be written as a tag name")
    return name


# -- the lenient reading public stacks do (non-greedy regexes; Arctic-SWE §3.2)

_FUNCTION = re.compile(r"<function=([^>\n]*)>")
_PARAMETER = re.compile(
    r"<parameter=([^>\n]*)>(.*?)(?=</parameter>|<parameter=|</function>|</tool_call>|$)",
    re.DOTALL,
)


def parse_lenient(raw: str, tools: Mapping[str, ToolSpec]) -> ToolCall | None:
    """The first call a forgiving regex parser finds in `raw`: an unclosed ``<tool_call>``
    accepted, a bare ``<function=...>`` without envelope too, a value ending at the next tag or
    the end of the text, one newline stripped on each side of a value, unknown parameters
    dropped, a later duplicate parameter overwriting an earlier one, text around ignored."""
    for body in lenient_bodies(raw):
        function = _FUNCTION.search(body)
        if function is None:
            continue
        name = function.group(1).strip()
        spec = tools.get(name)
        if spec is None:
            continue
        arguments: dict[str, str] = {}
        for key, value in _PARAMETER.findall(body[function.end() :]):
            key = key.strip()
            if key in spec.parameters:
                arguments[key] = strip_one_newline(value)
        if all(key in arguments for key in spec.required):
            return ToolCall(name, arguments)
    return None


QWEN3_CODER = Dialect(
    name="qwen3_coder",
    render=render,
    check=functools.partial(scan_turn, parser=QwenXmlDialect()),
    parse_lenient=parse_lenient,
    description="Qwen3-Coder / Qwen3.5 XML: <function=NAME><parameter=P>VALUE</parameter>",
)
