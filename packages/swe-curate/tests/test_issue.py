"""Reading the issue's own claims: the example parser on hand-written issues and, by
hypothesis, on rendered claims of arbitrary literals (render → parse = identity)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from swe_curate._issue import IssueExample, issue_examples, named_functions

literals = st.recursive(
    st.one_of(
        st.integers(-10_000, 10_000),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        # Backticks are markup in issues and dropped before parsing, so literals here hold none.
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="`"), max_size=12),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner)),
    max_leaves=6,
)
PHRASES = ["==", "->", "→", "should return", "must return", "should be", "already returns"]


@given(
    args=st.lists(literals, max_size=3),
    value=literals,
    phrase=st.sampled_from(PHRASES),
    ticks=st.booleans(),
)
def test_a_rendered_value_claim_parses_back(
    args: list[Any], value: Any, phrase: str, ticks: bool
) -> None:
    call = f"parse({', '.join(repr(a) for a in args)})"
    quote = "`" if ticks else ""
    issue = f"Broken again. {quote}{call}{quote} {phrase} {quote}{value!r}{quote}. Please fix."
    (found,) = issue_examples(issue, ["parse"])
    assert found.arguments() == tuple(args)
    assert repr(found.expected()) == repr(value)
    assert found.raises is None


@given(args=st.lists(literals, max_size=3), error=st.sampled_from(["ValueError", "KeyError"]))
def test_a_rendered_raise_claim_parses_back(args: list[Any], error: str) -> None:
    call = f"parse({', '.join(repr(a) for a in args)})"
    (found,) = issue_examples(f"{call} returns junk; it should raise {error}.", ["parse"])
    assert found == IssueExample("parse", repr(tuple(args)), raises=error)


def test_what_the_buggy_code_does_is_not_a_claim() -> None:
    issue = "clamp(-5, 0, 10) returns -5, it should return 0. clamp(3, 0, 10) returns 3."
    assert issue_examples(issue) == [IssueExample("clamp", "(-5, 0, 10)", value="0")]


def test_each_call_owns_only_the_text_up_to_the_next_call() -> None:
    issue = "parse_duration() ignores hours: parse_duration('1h30m') raises KeyError; it should return 5400."
    assert issue_examples(issue) == [IssueExample("parse_duration", "('1h30m',)", value="5400")]


def test_non_literal_arguments_and_unknown_functions_are_ignored() -> None:
    issue = "f(x) should return 3. g(1) should return 2. f(1, key=2) should return 4."
    assert issue_examples(issue, ["f"]) == []
    assert issue_examples(issue) == [IssueExample("g", "(1,)", value="2")]


def test_named_functions_are_whole_words() -> None:
    issue = "parse_duration ignores hours; see also my_clamp."
    assert named_functions(issue, ["parse_duration", "clamp", "_unit"]) == {"parse_duration"}
