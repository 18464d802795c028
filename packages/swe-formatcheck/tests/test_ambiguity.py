"""Tag variants and special-token text: rejected in values, reasoning and hermes bodies, refused by
`render_turn`, found in linear time, and nothing else is touched."""

from __future__ import annotations

import time

import pytest
from formatcheck_turns import THINK, bash, check, xml_call
from hypothesis import example, given
from hypothesis import strategies as st

from swe_formatcheck import Code, RenderError, ToolCall, render_turn
from swe_formatcheck._ambiguity import find_in_json, find_in_value
from swe_formatcheck.strategies import (
    ALL_MARKUP,
    any_text,
    special_token_texts,
    tag_variants,
    text_without,
    unambiguous,
)

SPECIAL_TOKENS = special_token_texts()
SAFE = text_without(ALL_MARKUP)


@given(SAFE, st.one_of(tag_variants(), SPECIAL_TOKENS), SAFE)
@example("echo '", "<parameter = x>", "'")
@example("echo 'a", "</ parameter>", "b'")
@example("x", "<\t/parameter>", "")
def test_a_value_holding_a_variant_is_rejected_and_refused(
    before: str, variant: str, after: str
) -> None:
    value = before + variant + after
    verdict = check(THINK + xml_call("execute_bash", ("command", value)))
    expected = Code.SPECIAL_TOKEN_TEXT if variant.startswith("<|") else Code.AMBIGUOUS_MARKUP
    assert verdict.codes == (expected,)
    assert verdict.call is None
    with pytest.raises(RenderError):
        render_turn(None, bash(value))


@given(SAFE, st.one_of(tag_variants(), SPECIAL_TOKENS), SAFE)
def test_reasoning_holding_a_variant_is_rejected_and_refused(
    before: str, variant: str, after: str
) -> None:
    reasoning = before + variant + after
    raw = f"<think>\n{reasoning}\n</think>\n\n" + xml_call("execute_bash", ("command", "ls"))
    verdict = check(raw)
    expected = Code.SPECIAL_TOKEN_TEXT if variant.startswith("<|") else Code.AMBIGUOUS_MARKUP
    assert verdict.codes == (expected,)
    assert verdict.call is None
    with pytest.raises(RenderError):
        render_turn(reasoning, bash("ls"))


@given(SAFE, SAFE)
def test_values_without_variants_round_trip(value: str, reasoning: str) -> None:
    call = ToolCall("edit_via_str_replace", {"path": "a", "old_str": value, "new_str": reasoning})
    verdict = check(render_turn(reasoning, call))
    assert verdict.codes == ()
    assert verdict.call == call
    assert verdict.reasoning == reasoning


@given(st.lists(st.one_of(any_text(), tag_variants(), SPECIAL_TOKENS), max_size=6).map("".join))
def test_the_finder_agrees_with_the_readable_oracle(text: str) -> None:
    found = find_in_value(text)
    assert (found is None) is unambiguous(text)
    if found is not None:
        assert not unambiguous(text[found.at : found.at + len(found.text)])
        assert unambiguous(text[: found.at])


@given(any_text(), st.one_of(tag_variants(), SPECIAL_TOKENS))
def test_hermes_render_escapes_what_a_raw_body_may_not_hold(text: str, variant: str) -> None:
    call = bash(text + variant)
    raw = render_turn(None, call, dialect="hermes")
    assert check(raw, dialect="hermes", reasoning="optional").call == call
    body = raw[len("<tool_call>\n") : -len("\n</tool_call>")]
    assert find_in_json(body) is None
    assert "<" not in body


@pytest.mark.parametrize(
    "flood", ["<" + " " * 200_000, "< / " * 100_000, "<" * 400_000, "<|" + "a" * 400_000]
)
def test_floods_are_scanned_in_linear_time(flood: str) -> None:
    """Possessive quantifiers: a megabyte of ``<`` and whitespace costs one pass, not n^2."""
    started = time.process_time()
    for _ in range(3):
        assert find_in_value(flood) is None
    # A quadratic scan of 400k characters takes minutes; linear takes milliseconds.
    assert time.process_time() - started < 2.0
