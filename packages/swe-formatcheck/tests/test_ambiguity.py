"""Tag variants and special-token text: rejected in values, reasoning and hermes bodies, refused by
`render_turn`, found in linear time, and nothing else is touched."""

from __future__ import annotations

import time

import pytest
from formatcheck_turns import (
    ALL_MARKUP,
    ANY_TEXT,
    TAG_NAMES,
    THINK,
    bash,
    check,
    unambiguous,
    without,
    xml_call,
)
from hypothesis import assume, example, given
from hypothesis import strategies as st

from swe_formatcheck import Code, RenderError, ToolCall, render_turn
from swe_formatcheck._ambiguity import find_in_json, find_in_value

#: Characters vLLM's regex ``\s`` matches (Unicode White_Space), plus the four separators
#: ``str.isspace`` adds; one of each kind is enough to show the class is taken whole.
SPACES = (" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028", "\u3000")


@st.composite
def tag_variants(draw: st.DrawFn) -> str:
    """``<`` ws* [/ ws*] NAME ws* (= | >) with NAME in a random letter case."""
    spaces = st.lists(st.sampled_from(SPACES), max_size=3).map("".join)
    name = draw(st.sampled_from(TAG_NAMES))
    cased = "".join(char.upper() if draw(st.booleans()) else char for char in name)
    slash = draw(st.sampled_from(["", "/"]))
    middle = draw(spaces) + slash + (draw(spaces) if slash else "")
    variant = "<" + middle + cased + draw(spaces) + draw(st.sampled_from("=>"))
    # The exact tags have codes of their own (nested_tag, parameter_unclosed, ...).
    assume(variant not in ALL_MARKUP)
    return variant


SPECIAL_TOKENS = st.from_regex(r"<\|[A-Za-z0-9_]{1,12}\|>", fullmatch=True)
SAFE = without(ALL_MARKUP)


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


@given(st.lists(st.one_of(ANY_TEXT, tag_variants(), SPECIAL_TOKENS), max_size=6).map("".join))
def test_the_finder_agrees_with_the_readable_oracle(text: str) -> None:
    found = find_in_value(text)
    assert (found is None) is unambiguous(text)
    if found is not None:
        assert not unambiguous(text[found.at : found.at + len(found.text)])
        assert unambiguous(text[: found.at])


@given(ANY_TEXT, st.one_of(tag_variants(), SPECIAL_TOKENS))
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
