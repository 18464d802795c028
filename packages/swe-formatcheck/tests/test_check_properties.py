"""Properties of `check_turn`: mutations of valid turns are rejected with the right code, and no
text whatsoever makes it raise."""

from __future__ import annotations

from collections.abc import Callable

from formatcheck_turns import ALL_MARKUP, ANY_TEXT, FRAGMENTS, TOOL_NAMES, without
from hypothesis import given
from hypothesis import strategies as st

from swe_formatcheck import Code, ToolCall, ToolSpec, TurnVerdict, check_turn, render_turn

UNKNOWN = "Q" * 17  # longer than any generated name, so never declared

Mutation = tuple[str, dict[str, object], Code]
Mutator = Callable[[str, ToolCall], Mutation]


def _split(raw: str) -> tuple[str, str]:
    at = raw.index("<tool_call>")
    return raw[:at], raw[at:]


def _first_param_block(raw: str) -> str:
    start = raw.index("<parameter=")
    end = raw.index("</parameter>\n", start) + len("</parameter>\n")
    return raw[start:end]


def _glue_text(raw: str, call: ToolCall) -> str:
    tag = f"<parameter={next(iter(call.arguments))}>"
    return raw.replace(tag, tag + "x", 1)


XML_MUTATORS: dict[str, Mutator] = {
    "drop_think_close": lambda raw, _: (
        raw.replace("</think>", "", 1),
        {},
        Code.REASONING_UNCLOSED,
    ),
    "drop_reasoning": lambda raw, _: (_split(raw)[1], {}, Code.REASONING_MISSING),
    "double_reasoning": lambda raw, _: (_split(raw)[0] + raw, {}, Code.REASONING_DUPLICATE),
    "reasoning_after": lambda raw, _: (raw + "\n" + _split(raw)[0], {}, Code.REASONING_MISPLACED),
    "forbidden": lambda raw, _: (raw, {"reasoning": "forbidden"}, Code.REASONING_FORBIDDEN),
    "call_in_reasoning": lambda raw, _: (
        raw.replace("</think>", _split(raw)[1] + "</think>", 1),
        {},
        Code.CALL_IN_REASONING,
    ),
    "prose_before": lambda raw, _: ("Sure.".join(_split(raw)), {}, Code.TEXT_BEFORE_CALL),
    "prose_after": lambda raw, _: (raw + "\nDone.", {}, Code.TEXT_AFTER_CALL),
    "two_calls": lambda raw, _: (raw + "\n" + _split(raw)[1], {}, Code.MULTIPLE_CALLS),
    "drop_envelope_close": lambda raw, _: (raw[: -len("</tool_call>")], {}, Code.ENVELOPE_UNCLOSED),
    "drop_function_close": lambda raw, _: (
        raw.replace("</function>", ""),
        {},
        Code.FUNCTION_UNCLOSED,
    ),
    "drop_parameter_close": lambda raw, _: (
        raw.replace("\n</parameter>", "", 1),
        {},
        Code.PARAMETER_UNCLOSED,
    ),
    "duplicate_parameter": lambda raw, _: (
        raw.replace("</function>", _first_param_block(raw) + "</function>"),
        {},
        Code.DUPLICATE_PARAMETER,
    ),
    "unknown_function": lambda raw, call: (
        raw.replace(f"<function={call.name}>", f"<function={UNKNOWN}>"),
        {},
        Code.UNKNOWN_FUNCTION,
    ),
    "unknown_parameter": lambda raw, _: (
        raw.replace("</function>", f"<parameter={UNKNOWN}>\n1\n</parameter>\n</function>"),
        {},
        Code.UNKNOWN_PARAMETER,
    ),
    "missing_parameter": lambda raw, _: (
        raw.replace(_first_param_block(raw), "", 1),
        {},
        Code.MISSING_PARAMETER,
    ),
    "stray_close": lambda raw, _: (raw + "</parameter>", {}, Code.STRAY_TAG),
    "nested_envelope": lambda raw, _: (
        raw.replace("<tool_call>", "<tool_call><tool_call>"),
        {},
        Code.NESTED_TAG,
    ),
    # Text glued to the opening tag: the body no longer starts with the canonical newline (dropping
    # a newline instead could land on another valid value when the value itself ends in one).
    "no_canonical_newline": lambda raw, call: (_glue_text(raw, call), {}, Code.MALFORMED_PARAMETER),
    "truncated": lambda raw, _: (raw, {"stopped": False}, Code.TRUNCATED),
}

HERMES_MUTATORS: dict[str, Mutator] = {
    "broken_json": lambda raw, _: (
        raw.replace("}}\n</tool_call>", "}\n</tool_call>"),
        {},
        Code.INVALID_JSON,
    ),
    "duplicate_key": lambda raw, call: (
        raw.replace('"arguments": {', f'"arguments": {{"{next(iter(call.arguments))}": "x", ', 1),
        {},
        Code.DUPLICATE_PARAMETER,
    ),
    "arguments_as_string": lambda raw, _: (
        raw.replace('"arguments": {', '"arguments": "{', 1).replace(
            "}}\n</tool_call>", '}"}\n</tool_call>'
        ),
        {},
        Code.INVALID_JSON,
    ),
    "unknown_function": lambda raw, call: (
        raw.replace(f'"name": "{call.name}"', f'"name": "{UNKNOWN}"', 1),
        {},
        Code.UNKNOWN_FUNCTION,
    ),
    "drop_envelope_close": lambda raw, _: (raw[: -len("</tool_call>")], {}, Code.ENVELOPE_UNCLOSED),
}


@st.composite
def required_calls(draw: st.DrawFn, values: st.SearchStrategy[str]) -> tuple[ToolSpec, ToolCall]:
    """A tool whose parameters are all required, and a call that gives them (at least one)."""
    name = draw(TOOL_NAMES)
    arguments = draw(st.dictionaries(TOOL_NAMES, values, min_size=1, max_size=3))
    return ToolSpec(name, required=tuple(arguments)), ToolCall(name, arguments)


def _verdict(raw: str, spec: ToolSpec, options: dict[str, object]) -> TurnVerdict:
    return check_turn(raw, tools=(spec,), **options)  # type: ignore[arg-type]


@given(
    required_calls(without(ALL_MARKUP)),
    without(ALL_MARKUP),
    st.sampled_from(sorted(XML_MUTATORS)),
)
def test_every_qwen3_coder_mutation_is_rejected_with_its_code(
    spec_call: tuple[ToolSpec, ToolCall], reasoning: str, mutator: str
) -> None:
    spec, call = spec_call
    raw = render_turn(reasoning, call)
    assert _verdict(raw, spec, {}).ok
    mutated, options, code = XML_MUTATORS[mutator](raw, call)
    verdict = _verdict(mutated, spec, options)
    assert code in verdict.codes, (mutator, verdict.codes)
    assert not verdict.ok
    assert verdict.call is None


@given(
    required_calls(without(("</tool_call>",))),
    st.sampled_from(sorted(HERMES_MUTATORS)),
)
def test_every_hermes_mutation_is_rejected_with_its_code(
    spec_call: tuple[ToolSpec, ToolCall], mutator: str
) -> None:
    spec, call = spec_call
    raw = render_turn(None, call, dialect="hermes")
    options: dict[str, object] = {"dialect": "hermes", "reasoning": "optional"}
    assert _verdict(raw, spec, options).ok
    mutated, extra, code = HERMES_MUTATORS[mutator](raw, call)
    verdict = _verdict(mutated, spec, options | extra)
    assert code in verdict.codes, (mutator, verdict.codes)
    assert verdict.call is None


MARKUP_SOUP = st.lists(
    st.one_of(
        ANY_TEXT,
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
    required_calls(without(ALL_MARKUP)),
    without(ALL_MARKUP),
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from((*ALL_MARKUP, *FRAGMENTS, "x"))),
        min_size=1,
        max_size=3,
    ),
)
def test_near_valid_turns_are_either_rejected_or_read_back_exactly(
    spec_call: tuple[ToolSpec, ToolCall], reasoning: str, edits: list[tuple[int, str]]
) -> None:
    """Splice fragments into a valid turn: whatever is accepted must be unambiguous, i.e. its
    canonical rendering is accepted with the same call (no reading depends on leniency)."""
    spec, call = spec_call
    raw = render_turn(reasoning, call)
    for at, fragment in edits:
        at %= len(raw) + 1
        raw = raw[:at] + fragment + raw[at:]
    verdict = _verdict(raw, spec, {})
    if verdict.call is None:
        assert verdict.codes
        return
    again = check_turn(render_turn(verdict.reasoning, verdict.call), tools=(spec,))
    assert again.call == verdict.call
    assert again.reasoning == verdict.reasoning
