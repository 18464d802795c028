"""`check_turn`: one unit test per violation code, valid forms, options and bad input."""

from __future__ import annotations

import pytest
from formatcheck_turns import LS, THINK, bash, check, xml_call

from swe_formatcheck import Code, ToolCall, ToolSpec, check_turn


def test_canonical_turn_is_ok_with_exact_call_and_reasoning() -> None:
    verdict = check(THINK + LS)
    assert verdict.ok
    assert verdict.codes == ()
    assert verdict.call == bash("ls")
    assert verdict.reasoning == "Look around first."


@pytest.mark.parametrize(
    ("raw", "options", "expected"),
    [
        ("", {}, [Code.EMPTY_TURN]),
        (" \n\t ", {}, [Code.EMPTY_TURN]),
        ("", {"stopped": False}, [Code.EMPTY_TURN, Code.TRUNCATED]),
        (THINK + LS, {"stopped": False}, [Code.TRUNCATED]),
        (LS, {}, [Code.REASONING_MISSING]),
        (THINK + LS, {"reasoning": "forbidden"}, [Code.REASONING_FORBIDDEN]),
        ("<think>\nhm\n" + LS, {}, [Code.CALL_IN_REASONING, Code.REASONING_UNCLOSED, Code.NO_CALL]),
        (THINK + THINK + LS, {}, [Code.REASONING_DUPLICATE]),
        ("<think>a<think>b</think>" + LS, {}, [Code.REASONING_DUPLICATE]),
        (THINK + LS + THINK, {}, [Code.REASONING_MISPLACED]),
        (
            "hi " + THINK + LS,
            {},
            [Code.TEXT_BEFORE_CALL, Code.REASONING_MISPLACED, Code.REASONING_MISSING],
        ),
        ("<think>" + LS + "</think>" + LS, {}, [Code.CALL_IN_REASONING]),
        (THINK + "ok:" + LS, {}, [Code.TEXT_BEFORE_CALL]),
        (THINK + LS + "done", {}, [Code.TEXT_AFTER_CALL]),
        (THINK + "just prose", {}, [Code.TEXT_BEFORE_CALL, Code.NO_CALL]),
        (THINK, {}, [Code.NO_CALL]),
        (THINK + LS + LS, {}, [Code.MULTIPLE_CALLS]),
        (THINK + LS[: -len("</tool_call>")], {}, [Code.ENVELOPE_UNCLOSED]),
        (THINK + "<tool_call>\n</tool_call>", {}, [Code.FUNCTION_MISSING]),
        (THINK + LS.replace("</function>\n", ""), {}, [Code.FUNCTION_UNCLOSED]),
        (THINK + LS.replace("\n</parameter>", ""), {}, [Code.PARAMETER_UNCLOSED]),
        (THINK + LS.replace("\nls\n", "ls"), {}, [Code.MALFORMED_PARAMETER]),
        (THINK + LS.replace("\nls\n", "\n"), {}, [Code.MALFORMED_PARAMETER]),
        (THINK + LS.replace("=execute_bash", "="), {}, [Code.MALFORMED_TAG]),
        (
            THINK + LS.replace("=command", "=com mand"),
            {},
            [Code.MALFORMED_TAG, Code.MISSING_PARAMETER],
        ),
        (THINK + LS + "</parameter>", {}, [Code.STRAY_TAG]),
        (THINK + "</tool_call>" + LS, {}, [Code.STRAY_TAG]),
        (THINK + "<tool_call><tool_call>" + LS[11:], {}, [Code.NESTED_TAG]),
        (THINK + LS.replace("ls", "ls<function=x>"), {}, [Code.NESTED_TAG]),
        (THINK + LS.replace("<parameter=", "hi<parameter="), {}, [Code.STRAY_TEXT]),
        (THINK + xml_call("run", ("command", "ls")), {}, [Code.UNKNOWN_FUNCTION]),
        (
            THINK + xml_call("execute_bash", ("command", "ls"), ("cwd", "/")),
            {},
            [Code.UNKNOWN_PARAMETER],
        ),
        (THINK + xml_call("execute_bash"), {}, [Code.MISSING_PARAMETER]),
        (
            THINK + xml_call("execute_bash", ("command", "ls"), ("command", "rm -rf build")),
            {},
            [Code.DUPLICATE_PARAMETER],
        ),
        ("I read it.\n</think>\n\n" + LS, {"think_prefilled": True}, []),
        (
            "I read it.\n" + LS,
            {"think_prefilled": True},
            [Code.CALL_IN_REASONING, Code.REASONING_UNCLOSED, Code.NO_CALL],
        ),
        ("x</think>" + LS, {}, [Code.TEXT_BEFORE_CALL, Code.STRAY_TAG, Code.REASONING_MISSING]),
    ],
)
def test_each_violation_is_named(
    raw: str, options: dict[str, object], expected: list[Code]
) -> None:
    verdict = check(raw, **options)
    assert list(verdict.codes) == expected
    assert verdict.ok is (not expected)
    assert (verdict.call is not None) is verdict.ok


def test_duplicate_parameter_never_yields_the_last_value() -> None:
    verdict = check(
        THINK + xml_call("execute_bash", ("command", "ls"), ("command", "rm -rf build"))
    )
    assert not verdict.ok
    assert verdict.call is None


def test_codes_are_plain_strings_and_violations_carry_offsets() -> None:
    raw = THINK + "ok:" + LS
    verdict = check(raw)
    assert verdict.codes == ("text_before_call",)
    assert verdict.violations[0].offset == raw.index("ok:")
    assert "before" in verdict.violations[0].detail


def test_reasoning_modes() -> None:
    assert check(LS, reasoning="optional").ok
    assert check(THINK + LS, reasoning="optional").ok
    assert check(LS, reasoning="forbidden").ok
    assert check("\n\n" + THINK + LS + "\n", reasoning="required").ok


def test_only_ascii_whitespace_counts_as_whitespace() -> None:
    assert check(THINK + LS + "\u3000").codes == ("text_after_call",)
    assert check(THINK + LS.replace("<function=", "\x1c<function=")).codes == ("stray_text",)
    assert check("\u2028").codes[0] == "text_before_call"


def test_whitespace_between_structural_tags_is_tolerated() -> None:
    raw = (
        THINK
        + "<tool_call><function=execute_bash>  <parameter=command>\nls\n</parameter></function></tool_call>"
    )
    assert check(raw).call == bash("ls")


def test_one_canonical_newline_is_stripped_on_each_side_of_values() -> None:
    value = "\n\n  indented  \n\n"
    verdict = check(THINK + xml_call("execute_bash", ("command", value)))
    assert verdict.call == bash(value)


def test_other_tags_inside_values_are_text() -> None:
    value = "<div>\n<think_more> <parameters> </p> <functional=1>\n</div> <| x |>"
    assert check(THINK + xml_call("execute_bash", ("command", value))).call == bash(value)


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("<think>not reasoning</think>", "ambiguous_markup"),  # reasoning stage drops </think>
        ("echo '<parameter = x>'", "ambiguous_markup"),  # vLLM: a new parameter 'x'
        ("echo 'a</ parameter>b'", "ambiguous_markup"),  # vLLM: the value ends at 'a'
        ("a</parameter >b", "ambiguous_markup"),
        ("a<\t/parameter>b", "ambiguous_markup"),
        ("a<\u3000parameter\u2028=b", "ambiguous_markup"),
        ("a</Function>b", "ambiguous_markup"),
        ("a< TOOL_CALL >b", "ambiguous_markup"),
        ("done<|im_end|>", "special_token_text"),  # deleted by vLLM's reasoning stage
    ],
)
def test_tag_variants_and_special_tokens_in_values_are_rejected(value: str, code: str) -> None:
    verdict = check(THINK + xml_call("execute_bash", ("command", value)))
    assert verdict.codes == (code,)
    assert verdict.violations[0].offset == (THINK + LS).index("ls") + value.index("<")


def test_user_declared_tools() -> None:
    tools = {"grep": ToolSpec("grep", required=("pattern",), optional=("path",))}
    raw = THINK + xml_call("grep", ("pattern", "TODO"))
    assert check_turn(raw, tools=tools).call == ToolCall("grep", {"pattern": "TODO"})
    assert check_turn(raw, tools=[ToolSpec("grep", required=("pattern", "path"))]).codes == (
        "missing_parameter",
    )
    assert check_turn(THINK + LS, tools=tools).codes == ("unknown_function",)


@pytest.mark.parametrize(
    "raw", ["\ud800\udfff\ud800", "\x00" * 10, "<tool_call>\x00</tool_call>", "\ud83d" + LS]
)
def test_odd_strings_get_a_verdict(raw: str) -> None:
    for dialect in ("qwen3_coder", "hermes"):
        verdict = check(raw, dialect=dialect)
        assert not verdict.ok


def test_ten_megabytes_get_a_verdict() -> None:
    value = "x" * (10 * 1024 * 1024)
    verdict = check(THINK + xml_call("execute_bash", ("command", value)))
    assert verdict.call == bash(value)
    assert check("<tool_call>" * 100_000).codes[0] == "nested_tag"


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"raw": b"x"}, "raw"),
        ({"raw": None}, "raw"),
        ({"tools": "execute_bash"}, "tools"),
        ({"tools": [object()]}, "tools"),
        ({"tools": None}, "tools"),
        ({"dialect": 1}, "dialect"),
        ({"reasoning": None}, "reasoning"),
        ({"stopped": 1}, "stopped"),
        ({"think_prefilled": "yes"}, "think_prefilled"),
    ],
)
def test_wrong_argument_types_raise_type_error_naming_the_argument(
    arguments: dict[str, object], name: str
) -> None:
    call: dict[str, object] = {"raw": LS, "tools": ()} | arguments
    raw = call.pop("raw")
    with pytest.raises(TypeError, match=name):
        check_turn(raw, **call)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"dialect": "xml"}, "dialect"),
        ({"reasoning": "sometimes"}, "reasoning"),
        ({"reasoning": "forbidden", "think_prefilled": True}, "think_prefilled"),
    ],
)
def test_bad_option_values_raise_value_error(options: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check(LS, **options)
