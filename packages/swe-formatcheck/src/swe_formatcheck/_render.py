"""`render_turn`: write a turn in the exact form `check_turn` accepts (its inverse).

Used to write expert trajectories (the RFT warm start) in the same bytes a model must emit, so
``check_turn(render_turn(r, c), ...).call == c`` for every representable call.
"""

from __future__ import annotations

import json

from swe_formatcheck._ambiguity import Ambiguity, find_in_value
from swe_formatcheck._errors import RenderError
from swe_formatcheck._lexer import (
    CALL_CLOSE,
    CALL_OPEN,
    FUNC_CLOSE,
    FUNC_OPEN,
    HERMES_CALL_MARKERS,
    PARAM_CLOSE,
    PARAM_OPEN,
    TAG_NAME_SCAN,
    THINK_CLOSE,
    THINK_MARKERS,
    THINK_OPEN,
    XML_CALL_MARKERS,
)
from swe_formatcheck._tools import ToolCall

_CALL_MARKERS = {"qwen3_coder": XML_CALL_MARKERS, "hermes": HERMES_CALL_MARKERS}


def render_turn(
    reasoning: str | None,
    call: ToolCall,
    *,
    dialect: str = "qwen3_coder",
    think_prefilled: bool = False,
) -> str:
    """Render one assistant turn (without the stop token) in canonical form.

    qwen3_coder::

        <think>\\nREASONING\\n</think>\\n\\n<tool_call>\\n<function=NAME>\\n
        <parameter=P>\\nVALUE\\n</parameter>\\n ... </function>\\n</tool_call>

    hermes: the same reasoning block, then ``<tool_call>\\n{JSON}\\n</tool_call>``.

    Args:
        reasoning: the reasoning text, or ``None`` for no reasoning block.
        call: the call to write; parameters are written in the dict's order.
        dialect: ``"qwen3_coder"`` or ``"hermes"``.
        think_prefilled: omit ``<think>\\n`` because the chat template already wrote it; a
            reasoning text is then required (``""`` for an empty one).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: an unknown dialect.
        RenderError: the call or reasoning cannot be written so that it parses back exactly
            (a value holding call markup, a malformed tag name, reasoning holding tags), or
            a public parser would split or shorten it: a whitespace or case variant of a tag
            or special-token text such as ``<|im_end|>`` in a qwen3_coder value or in the
            reasoning (exactly the strings `check_turn` rejects). hermes values never fail:
            every ``<`` in them is written as the JSON escape ``\\u003c``.
    """
    _validate(reasoning, call, dialect, think_prefilled)
    head = _reasoning_block(reasoning, dialect, think_prefilled=think_prefilled)
    if dialect == "hermes":
        return head + _hermes_envelope(call)
    return head + _xml_envelope(call)


def _validate(reasoning: object, call: object, dialect: object, think_prefilled: object) -> None:
    if reasoning is not None and not isinstance(reasoning, str):
        raise TypeError(f"reasoning must be str or None, got {type(reasoning).__name__}")
    if not isinstance(call, ToolCall):
        raise TypeError(f"call must be a ToolCall, got {type(call).__name__}")
    if not isinstance(dialect, str):
        raise TypeError(f"dialect must be str, got {type(dialect).__name__}")
    if dialect not in _CALL_MARKERS:
        raise ValueError(f"dialect must be one of {sorted(_CALL_MARKERS)}, got {dialect!r}")
    if not isinstance(think_prefilled, bool):
        raise TypeError(f"think_prefilled must be bool, got {type(think_prefilled).__name__}")


def _reasoning_block(reasoning: str | None, dialect: str, *, think_prefilled: bool) -> str:
    if reasoning is None:
        if think_prefilled:
            raise RenderError("think_prefilled needs a reasoning text to close (use '')")
        return ""
    for marker in (*THINK_MARKERS, *_CALL_MARKERS[dialect]):
        if marker in reasoning:
            raise RenderError(f"reasoning cannot contain {marker!r}")
    _refuse(find_in_value(reasoning), "reasoning")
    opening = "" if think_prefilled else THINK_OPEN + "\n"
    return f"{opening}{reasoning}\n{THINK_CLOSE}\n\n"


def _refuse(found: Ambiguity | None, where: str) -> None:
    if found is not None:
        kind = "special-token text" if found.special else "a tag variant"
        raise RenderError(
            f"{where} cannot contain {kind} {found.text!r}: parsers read it as markup"
        )


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


def _xml_envelope(call: ToolCall) -> str:
    parts = [f"{CALL_OPEN}\n{FUNC_OPEN}{_xml_name('function', call.name)}>\n"]
    for param, value in call.arguments.items():
        for marker in XML_CALL_MARKERS:
            if marker in value:
                raise RenderError(f"value of {param!r} cannot contain {marker!r}")
        _refuse(find_in_value(value), f"value of {param!r}")
        parts.append(f"{PARAM_OPEN}{_xml_name('parameter', param)}>\n{value}\n{PARAM_CLOSE}\n")
    parts.append(f"{FUNC_CLOSE}\n{CALL_CLOSE}")
    return "".join(parts)


def _hermes_envelope(call: ToolCall) -> str:
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    # "<" can only occur inside a JSON string here; "\u003c" is JSON for "<", so the body reads
    # back the same while it holds no tag (no "</tool_call>" to end the envelope early, no
    # "</think>" or "<|im_end|>" for a reasoning stage to delete).
    body = body.replace("<", "\\u003c")
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"
