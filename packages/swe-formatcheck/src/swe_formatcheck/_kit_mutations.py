"""Structural mutations of a canonical turn, each with exactly the codes `check_turn` must give.

A mutation rewrites the text of a valid, canonically rendered turn (`render_turn`) and returns
``None`` where it does not apply (no parameter to duplicate, no reasoning block to unclose, ...).
The codes are written down here, apart from the checker; the kit's tests hold the checker to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

import attrs

from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import ReasoningMode
from swe_formatcheck._tools import ToolCall, ToolSpec


@attrs.frozen
class Base:
    """A valid turn before mutation: its raw text and what it was rendered from."""

    raw: str
    call: ToolCall
    spec: ToolSpec
    tools: tuple[ToolSpec, ...]
    reasoning: str | None
    mode: ReasoningMode  # the check_turn reasoning= mode
    prefilled: bool


Rewrite = Callable[[Base], "str | None"]


@attrs.frozen
class Mutation:
    """One named rewrite and the exact codes of the turn it produces."""

    name: str
    codes: tuple[Code, ...]
    rewrite: Rewrite


def _undeclared(taken: frozenset[str] | set[str], stem: str) -> str:
    name = stem
    while name in taken:
        name += "_"
    return name


def _envelope_at(base: Base) -> int:
    return base.raw.index("<tool_call>")


def _reasoning_head(base: Base) -> str | None:
    """The reasoning block as written (not for pre-filled turns, whose opening is in the prompt)."""
    if base.reasoning is None or base.prefilled:
        return None
    return base.raw[: _envelope_at(base)]


def _param_block(base: Base, param: str) -> str:
    start = base.raw.index(f"<parameter={param}>")
    end = base.raw.index("</parameter>\n", start) + len("</parameter>\n")
    return base.raw[start:end]


def _first_param(base: Base) -> str | None:
    return next(iter(base.call.arguments), None)


def _with_params(rewrite: Callable[[Base, str], str | None]) -> Rewrite:
    def apply(base: Base) -> str | None:
        param = _first_param(base)
        return None if param is None else rewrite(base, param)

    return apply


def _duplicate(base: Base, param: str) -> str:
    # A second, different value: lenient parsers keep the last, so `ls` becomes `rm -rf build`.
    value = "rm -rf build" if base.call.arguments[param] != "rm -rf build" else "ls"
    block = f"<parameter={param}>\n{value}\n</parameter>\n"
    return base.raw.replace("</function>", block + "</function>")


def _missing(base: Base) -> str | None:
    required = [param for param in base.call.arguments if param in base.spec.required]
    return base.raw.replace(_param_block(base, required[0]), "", 1) if required else None


def _unknown_function(base: Base) -> str:
    name = _undeclared({spec.name for spec in base.tools}, "undeclared_tool")
    return base.raw.replace(f"<function={base.call.name}>", f"<function={name}>", 1)


def _unknown_parameter(base: Base) -> str:
    param = _undeclared(base.spec.parameters, "undeclared_parameter")
    return base.raw.replace("</function>", f"<parameter={param}>\n1\n</parameter>\n</function>")


def _glued_text(base: Base, param: str) -> str:
    # Text glued to the opening tag: the value no longer starts with the canonical newline
    # (dropping a newline instead could land on another valid value ending in one).
    tag = f"<parameter={param}>"
    return base.raw.replace(tag, tag + "x", 1)


def _drop_reasoning(base: Base) -> str | None:
    head = _reasoning_head(base)
    return None if head is None or base.mode != "required" else base.raw[len(head) :]


def _double_reasoning(base: Base) -> str | None:
    head = _reasoning_head(base)
    return None if head is None else head + base.raw


def _reasoning_after(base: Base) -> str | None:
    head = _reasoning_head(base)
    return None if head is None else base.raw + "\n" + head


def _call_in_reasoning(base: Base) -> str | None:
    if base.reasoning is None:
        return None
    envelope = base.raw[_envelope_at(base) :]
    return base.raw.replace("</think>", envelope + "</think>", 1)


QWEN3_CODER_MUTATIONS: Final = (
    Mutation("duplicate_parameter", (Code.DUPLICATE_PARAMETER,), _with_params(_duplicate)),
    Mutation("missing_parameter", (Code.MISSING_PARAMETER,), _missing),
    Mutation("unknown_function", (Code.UNKNOWN_FUNCTION,), _unknown_function),
    Mutation("unknown_parameter", (Code.UNKNOWN_PARAMETER,), _unknown_parameter),
    Mutation("no_canonical_newline", (Code.MALFORMED_PARAMETER,), _with_params(_glued_text)),
    Mutation(
        "drop_parameter_close",
        (Code.PARAMETER_UNCLOSED,),
        _with_params(lambda base, param: base.raw.replace("\n</parameter>", "", 1)),
    ),
    Mutation(
        "drop_function_close",
        (Code.FUNCTION_UNCLOSED,),
        lambda base: base.raw.replace("</function>", "", 1),
    ),
    Mutation(
        "drop_envelope_close",
        (Code.ENVELOPE_UNCLOSED,),
        lambda base: base.raw.removesuffix("</tool_call>"),
    ),
    Mutation(
        "prose_before",
        (Code.TEXT_BEFORE_CALL,),
        lambda base: base.raw[: _envelope_at(base)] + "Sure." + base.raw[_envelope_at(base) :],
    ),
    Mutation("prose_after", (Code.TEXT_AFTER_CALL,), lambda base: base.raw + "\nDone."),
    Mutation(
        "two_calls",
        (Code.MULTIPLE_CALLS,),
        lambda base: base.raw + "\n" + base.raw[_envelope_at(base) :],
    ),
    Mutation("stray_close", (Code.STRAY_TAG,), lambda base: base.raw + "</parameter>"),
    Mutation(
        "nested_envelope",
        (Code.NESTED_TAG,),
        lambda base: base.raw.replace("<tool_call>", "<tool_call><tool_call>", 1),
    ),
    Mutation("drop_reasoning", (Code.REASONING_MISSING,), _drop_reasoning),
    Mutation("double_reasoning", (Code.REASONING_DUPLICATE,), _double_reasoning),
    Mutation("reasoning_after", (Code.REASONING_MISPLACED,), _reasoning_after),
    Mutation("call_in_reasoning", (Code.CALL_IN_REASONING,), _call_in_reasoning),
)


def _arguments_as_string(base: Base) -> str:
    # The OpenAI wire form (arguments serialised into a string): a near-miss parsers may accept.
    head = base.raw[: _envelope_at(base)]
    arguments = json.dumps(base.call.arguments, ensure_ascii=False)
    body = json.dumps({"name": base.call.name, "arguments": arguments}, ensure_ascii=False)
    body = body.replace("<", "\\u003c")
    return f"{head}<tool_call>\n{body}\n</tool_call>"


def _hermes_unknown_function(base: Base) -> str:
    name = _undeclared({spec.name for spec in base.tools}, "undeclared_tool")
    return base.raw.replace(f'"name": "{base.call.name}"', f'"name": "{name}"', 1)


HERMES_MUTATIONS: Final = (
    Mutation(
        "duplicate_argument",
        (Code.DUPLICATE_PARAMETER,),
        _with_params(
            lambda base, param: base.raw.replace(
                '"arguments": {', '"arguments": {' + f'"{param}": "x", ', 1
            )
        ),
    ),
    Mutation(
        "broken_json",
        (Code.INVALID_JSON,),
        lambda base: base.raw.replace("}}\n</tool_call>", "}\n</tool_call>"),
    ),
    # A string is no object, so a tool with required parameters also misses them.
    Mutation(
        "arguments_as_string",
        (Code.NON_OBJECT_JSON,),
        lambda base: None if base.spec.required else _arguments_as_string(base),
    ),
    Mutation(
        "arguments_as_string",
        (Code.NON_OBJECT_JSON, Code.MISSING_PARAMETER),
        lambda base: _arguments_as_string(base) if base.spec.required else None,
    ),
    Mutation("unknown_function", (Code.UNKNOWN_FUNCTION,), _hermes_unknown_function),
    Mutation(
        "drop_envelope_close",
        (Code.ENVELOPE_UNCLOSED,),
        lambda base: base.raw.removesuffix("</tool_call>"),
    ),
    Mutation("prose_after", (Code.TEXT_AFTER_CALL,), lambda base: base.raw + "\nDone."),
    Mutation(
        "two_calls",
        (Code.MULTIPLE_CALLS,),
        lambda base: base.raw + "\n" + base.raw[_envelope_at(base) :],
    ),
    Mutation("drop_reasoning", (Code.REASONING_MISSING,), _drop_reasoning),
    Mutation("double_reasoning", (Code.REASONING_DUPLICATE,), _double_reasoning),
)

MUTATIONS: Final = {"qwen3_coder": QWEN3_CODER_MUTATIONS, "hermes": HERMES_MUTATIONS}


def _value_prefix(base: Base, param: str, text: str) -> str:
    tag = f"<parameter={param}>\n"
    return base.raw.replace(tag, tag + text, 1)


def _variant_close(base: Base, param: str) -> str:
    block = _param_block(base, param)
    return base.raw.replace(block, block.replace("\n</parameter>", "\n</ parameter>", 1), 1)


def _bare_function(base: Base) -> str:
    start = _envelope_at(base)
    return base.raw[:start] + base.raw[start:].replace("<tool_call>\n", "", 1).replace(
        "\n</tool_call>", "", 1
    )


#: Structural near-misses: markup that lenient parsers read one way and the strict rule rejects.
QWEN3_CODER_NEAR_MISSES: Final = (
    Mutation(
        "envelope_in_value",
        (Code.NESTED_TAG,),
        _with_params(lambda base, param: _value_prefix(base, param, "<tool_call>")),
    ),
    Mutation(
        "function_in_value",
        (Code.NESTED_TAG,),
        _with_params(
            lambda base, param: _value_prefix(base, param, f"<function={base.call.name}>")
        ),
    ),
    Mutation("variant_closes_parameter", (Code.PARAMETER_UNCLOSED,), _with_params(_variant_close)),
    Mutation(
        "bare_function", (Code.STRAY_TAG, Code.TEXT_BEFORE_CALL, Code.NO_CALL), _bare_function
    ),
    Mutation(
        "stray_close_before",
        (Code.STRAY_TAG,),
        lambda base: (
            base.raw[: _envelope_at(base)] + "</function>" + base.raw[_envelope_at(base) :]
        ),
    ),
)

HERMES_NEAR_MISSES: Final = (
    Mutation(
        "duplicate_name_key",
        (Code.DUPLICATE_KEY,),
        lambda base: base.raw.replace(
            f'"name": "{base.call.name}"',
            f'"name": "{base.call.name}", "name": "{base.call.name}"',
            1,
        ),
    ),
)

NEAR_MISSES: Final = {"qwen3_coder": QWEN3_CODER_NEAR_MISSES, "hermes": HERMES_NEAR_MISSES}
