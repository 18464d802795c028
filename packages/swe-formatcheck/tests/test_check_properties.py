"""Properties of `check_turn`: option mutations of valid turns are rejected with their code, and
no text whatsoever makes it raise. (The structural mutations, each with its exact codes, are the
kit's `malformed_turns`, held to their codes in ``test_strategies.py``.)"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swe_formatcheck import Code, ToolCall, ToolSpec, check_turn, render_turn
from swe_formatcheck.strategies import (
    ALL_MARKUP,
    FRAGMENTS,
    GeneratedTurn,
    any_text,
    valid_turns,
)

#: A reasoning-carrying valid turn with random declared tools (the mutations below need one).
REASONED_TURNS = valid_turns(tools=None, reasoning="required", think_prefilled=False)


@settings(max_examples=40)
@given(REASONED_TURNS)
def test_option_and_reasoning_mutations_are_rejected_with_their_code(turn: GeneratedTurn) -> None:
    """What depends on the options rather than the text, and a reasoning block left open."""
    assert turn.verdict().codes == ()
    cases: list[tuple[str, dict[str, object], Code]] = [
        (turn.raw, {"reasoning": "forbidden"}, Code.REASONING_FORBIDDEN),
        (turn.raw, {"stopped": False}, Code.TRUNCATED),
        (turn.raw.replace("</think>", "", 1), {}, Code.REASONING_UNCLOSED),
    ]
    for raw, options, code in cases:
        verdict = check_turn(raw, tools=turn.tools, **options)  # type: ignore[arg-type]
        assert code in verdict.codes, (options, verdict.codes)
        assert verdict.call is None


MARKUP_SOUP = st.lists(
    st.one_of(
        any_text(),
        st.sampled_from((*ALL_MARKUP, *FRAGMENTS, "<function=submit>", "<parameter=command>")),
    ),
    max_size=30,
).map("".join)

#: Canonical turns of either dialect, with or without reasoning: mixed into the soup so that the
#: accepted-turn branch below runs (arbitrary text alone is never an accepted turn).
RENDERED_TURNS = st.builds(
    lambda dialect, reasoning, command: render_turn(
        reasoning, ToolCall("execute_bash", {"command": command}), dialect=dialect
    ),
    st.sampled_from(["qwen3_coder", "hermes"]),
    st.one_of(st.none(), st.text(alphabet="abc xyz\n", min_size=1, max_size=20)),
    st.text(alphabet="abcdefgh ./-", min_size=1, max_size=30),
)


@given(
    st.one_of(MARKUP_SOUP, RENDERED_TURNS),
    st.sampled_from(["qwen3_coder", "hermes"]),
    st.sampled_from(["required", "optional", "forbidden"]),
    st.booleans(),
    st.booleans(),
)
def test_arbitrary_text_never_raises_and_ok_means_one_call(
    raw: str, dialect: str, reasoning: str, stopped: bool, prefilled: bool
) -> None:
    if prefilled and reasoning == "forbidden":
        prefilled = False
    tools = (ToolSpec("submit"), ToolSpec("execute_bash", required=("command",)))
    verdict = check_turn(
        raw,
        tools=tools,
        dialect=dialect,  # type: ignore[arg-type]
        reasoning=reasoning,  # type: ignore[arg-type]
        stopped=stopped,
        think_prefilled=prefilled,
    )
    assert verdict.ok is (verdict.codes == ())
    assert (verdict.call is not None) is verdict.ok
    assert len(set(verdict.codes)) == len(verdict.codes)
    assert all(0 <= violation.offset <= len(raw) for violation in verdict.violations)
    if verdict.call is not None:
        # An accepted turn is representable: its canonical rendering reads back the same.
        assert stopped
        again = render_turn(
            verdict.reasoning, verdict.call, dialect=dialect, think_prefilled=prefilled
        )
        assert (
            check_turn(
                again,
                tools=tools,
                dialect=dialect,
                think_prefilled=prefilled,  # type: ignore[arg-type]
                reasoning="optional" if verdict.reasoning is None else "required",
            ).call
            == verdict.call
        )


@given(
    REASONED_TURNS,
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from((*ALL_MARKUP, *FRAGMENTS, "x"))),
        min_size=1,
        max_size=3,
    ),
)
def test_near_valid_turns_are_either_rejected_or_read_back_exactly(
    turn: GeneratedTurn, edits: list[tuple[int, str]]
) -> None:
    """Splice fragments into a valid turn: whatever is accepted must be unambiguous, i.e. its
    canonical rendering is accepted with the same call (no reading depends on leniency)."""
    raw = turn.raw
    for at, fragment in edits:
        at %= len(raw) + 1
        raw = raw[:at] + fragment + raw[at:]
    verdict = check_turn(raw, tools=turn.tools)
    if verdict.call is None:
        assert verdict.codes
        return
    again = check_turn(render_turn(verdict.reasoning, verdict.call), tools=turn.tools)
    assert again.call == verdict.call
    assert again.reasoning == verdict.reasoning
