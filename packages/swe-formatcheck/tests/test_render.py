"""`render_turn` is the exact inverse of `check_turn`."""

from __future__ import annotations

import pytest
from formatcheck_turns import LS, THINK, bash, check
from hypothesis import given
from hypothesis import strategies as st

from swe_formatcheck import RenderError, ToolCall, ToolSpec, check_turn, render_turn
from swe_formatcheck._lexer import HERMES_CALL_MARKERS, THINK_MARKERS, XML_CALL_MARKERS
from swe_formatcheck.strategies import ALL_MARKUP, any_text, text_without, tool_names


def test_render_matches_the_hand_written_canonical_form() -> None:
    assert render_turn("Look around first.", bash("ls")) == THINK + LS
    assert render_turn(None, ToolCall("submit")) == (
        "<tool_call>\n<function=submit>\n</function>\n</tool_call>"
    )
    assert render_turn("r", bash("ls"), think_prefilled=True).startswith("r\n</think>\n\n")


def test_hermes_render() -> None:
    command = 'echo "</tool_call>" "</think>" "<|im_end|>"'
    raw = render_turn(None, bash(command), dialect="hermes")
    assert raw == (
        '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "echo '
        '\\"\\u003c/tool_call>\\" \\"\\u003c/think>\\" \\"\\u003c|im_end|>\\""}}'
        "\n</tool_call>"
    )
    assert check(raw, dialect="hermes", reasoning="optional").call == bash(command)


@pytest.mark.parametrize(
    ("reasoning", "call", "options"),
    [
        (None, bash("a </parameter> b"), {}),
        (None, bash("<tool_call>"), {}),
        (None, bash("x<function=y>"), {}),
        (None, ToolCall("execute bash", {}), {}),
        (None, ToolCall("", {}), {}),
        (None, ToolCall("f", {"a>b": ""}), {}),
        ("I saw </think>", bash("ls"), {}),
        ("nested <think>", bash("ls"), {}),
        ("call <tool_call>", bash("ls"), {"dialect": "hermes"}),
        ("call <function=x>", bash("ls"), {}),
        (None, bash("echo '<parameter = x>'"), {}),
        (None, bash("a</ parameter>b"), {}),
        (None, bash("grep '</think>' t.jinja"), {}),
        (None, bash("printf 'done<|im_end|>'"), {}),
        ("close it with </ parameter>", bash("ls"), {}),
        ("the stop token is <|im_end|>", bash("ls"), {"dialect": "hermes"}),
        (None, bash("ls"), {"think_prefilled": True}),
    ],
)
def test_unrepresentable_turns_raise_render_error(
    reasoning: str | None, call: ToolCall, options: dict[str, object]
) -> None:
    with pytest.raises(RenderError):
        render_turn(reasoning, call, **options)  # type: ignore[arg-type]


def test_render_argument_errors() -> None:
    with pytest.raises(TypeError, match="call"):
        render_turn(None, {"name": "submit"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reasoning"):
        render_turn(b"r", bash("ls"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="think_prefilled"):
        render_turn("r", bash("ls"), think_prefilled=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dialect"):
        render_turn("r", bash("ls"), dialect="json")


@st.composite
def specs_and_calls(draw: st.DrawFn, values: st.SearchStrategy[str]) -> tuple[ToolSpec, ToolCall]:
    name = draw(tool_names())
    arguments = draw(st.dictionaries(tool_names(), values, max_size=4))
    required = tuple(param for param in arguments if draw(st.booleans()))
    optional = tuple(param for param in arguments if param not in required)
    return ToolSpec(name, required, optional), ToolCall(name, arguments)


@given(
    specs_and_calls(text_without(XML_CALL_MARKERS)),
    st.none() | text_without(ALL_MARKUP),
    st.booleans(),
)
def test_qwen3_coder_render_then_parse_is_identity(
    spec_call: tuple[ToolSpec, ToolCall], reasoning: str | None, prefilled: bool
) -> None:
    spec, call = spec_call
    if prefilled and reasoning is None:
        reasoning = ""
    raw = render_turn(reasoning, call, think_prefilled=prefilled)
    verdict = check_turn(
        raw,
        tools=(spec,),
        reasoning="optional" if reasoning is None else "required",
        think_prefilled=prefilled,
    )
    assert verdict.codes == ()
    assert verdict.call == call
    assert verdict.reasoning == reasoning


@given(
    specs_and_calls(any_text()),
    st.none() | text_without((*THINK_MARKERS, *HERMES_CALL_MARKERS)),
)
def test_hermes_render_then_parse_is_identity(
    spec_call: tuple[ToolSpec, ToolCall], reasoning: str | None
) -> None:
    spec, call = spec_call
    raw = render_turn(reasoning, call, dialect="hermes")
    verdict = check_turn(raw, tools=(spec,), dialect="hermes", reasoning="optional")
    assert verdict.codes == ()
    assert verdict.call == call
    assert verdict.reasoning == reasoning
