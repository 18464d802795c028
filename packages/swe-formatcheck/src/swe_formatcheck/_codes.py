"""Stable violation codes (the values are part of the public API and never change meaning).

A `TurnVerdict` lists one `Violation` per kind of problem found, in the order first found, so the
codes double as metric labels ("share of turns with duplicate_parameter").
"""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    """Why a raw assistant turn was rejected. Each member *is* its string value."""

    # -- the turn as a whole
    EMPTY_TURN = "empty_turn"
    """The turn is empty or whitespace only."""
    TRUNCATED = "truncated"
    """Generation did not end on the stop token (``stopped=False``: a length limit cut it off)."""

    # -- reasoning block ``<think>...</think>``
    REASONING_MISSING = "reasoning_missing"
    """``reasoning="required"`` but the turn does not open with a reasoning block."""
    REASONING_FORBIDDEN = "reasoning_forbidden"
    """``reasoning="forbidden"`` but the turn opens with a reasoning block."""
    REASONING_UNCLOSED = "reasoning_unclosed"
    """A ``<think>`` (or the pre-filled one) is never closed by ``</think>``."""
    REASONING_DUPLICATE = "reasoning_duplicate"
    """A second reasoning block right after the first, or ``<think>`` nested inside reasoning."""
    REASONING_MISPLACED = "reasoning_misplaced"
    """A reasoning tag after text, inside the tool-call envelope, or after the call."""
    CALL_IN_REASONING = "call_in_reasoning"
    """Tool-call markup (``<tool_call>``, ``<function=``, ...) inside a reasoning block."""

    # -- the envelope ``<tool_call>...</tool_call>``
    TEXT_BEFORE_CALL = "text_before_call"
    """Non-whitespace text between the reasoning block (or the start) and the envelope."""
    TEXT_AFTER_CALL = "text_after_call"
    """Non-whitespace text after the envelope."""
    NO_CALL = "no_call"
    """No tool-call envelope outside reasoning."""
    MULTIPLE_CALLS = "multiple_calls"
    """More than one envelope, or more than one function inside one envelope."""
    ENVELOPE_UNCLOSED = "envelope_unclosed"
    """``<tool_call>`` without its ``</tool_call>``."""
    FUNCTION_MISSING = "function_missing"
    """An envelope that holds no ``<function=NAME>`` (qwen3_coder)."""
    FUNCTION_UNCLOSED = "function_unclosed"
    """``<function=NAME>`` not closed by ``</function>`` before the envelope ends."""
    PARAMETER_UNCLOSED = "parameter_unclosed"
    """``<parameter=P>`` not closed by ``</parameter>`` before ``<parameter=``, ``</function>``,
    ``</tool_call>`` or the end (where lenient parsers silently end the value)."""
    MALFORMED_PARAMETER = "malformed_parameter"
    """A parameter body without the canonical newline right after ``>`` and right before ``</``."""
    MALFORMED_TAG = "malformed_tag"
    """``<function=`` or ``<parameter=`` whose name is empty, has whitespace or ``<``, or no ``>``."""
    STRAY_TAG = "stray_tag"
    """A closing tag with nothing open, or call markup outside any envelope."""
    NESTED_TAG = "nested_tag"
    """An opening tag inside an element that cannot hold it: ``<tool_call>`` inside an envelope,
    ``<function=`` inside a function, either of them inside a parameter value."""
    STRAY_TEXT = "stray_text"
    """Non-whitespace text inside the envelope but outside any parameter value."""
    AMBIGUOUS_MARKUP = "ambiguous_markup"
    """A value, reasoning text or hermes body holds a whitespace or case variant of a tag
    (``</ parameter>``, ``<parameter =``, ``</think>`` in a value, ...) that a public parser
    reads as markup, so it would split or end the text there."""
    SPECIAL_TOKEN_TEXT = "special_token_text"
    """A value, reasoning text or hermes body holds special-token text such as ``<|im_end|>``,
    which public parsers delete from what they return."""

    # -- the call against the declared tools
    UNKNOWN_FUNCTION = "unknown_function"
    """The function name is not among the declared tools."""
    UNKNOWN_PARAMETER = "unknown_parameter"
    """A parameter the tool does not declare."""
    MISSING_PARAMETER = "missing_parameter"
    """A required parameter of the tool is absent."""
    DUPLICATE_PARAMETER = "duplicate_parameter"
    """The same parameter twice. Lenient parsers keep the last value: ``ls`` -> ``rm -rf build``."""

    # -- hermes JSON
    INVALID_JSON = "invalid_json"
    """The envelope body is not strict JSON (includes NaN/Infinity, over-deep nesting)."""
    NON_OBJECT_JSON = "non_object_json"
    """The body, or its ``arguments``, is valid JSON but not an object."""
    MALFORMED_CALL = "malformed_call"
    """The object lacks ``name`` or ``arguments``, has other keys, or ``name`` is not a string."""
    DUPLICATE_KEY = "duplicate_key"
    """A key repeated in the call object itself (``json.loads`` silently keeps the last)."""
    NON_STRING_ARGUMENT = "non_string_argument"
    """An argument value that is not a JSON string (every declared parameter is a string)."""
