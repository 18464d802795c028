"""The qwen3_coder dialect: exact values and the places where public parsers are lenient.

Each case below is a turn that vLLM's ``qwen3_coder`` tool parser (regex based: values end at the
first ``</parameter>`` *or* the next ``<parameter=`` / ``</function>``, a missing
``</tool_call>`` is accepted, a later duplicate parameter overwrites the earlier one, a bare
``<function=...>`` outside any envelope is still parsed) turns into an executed call.
"""

from __future__ import annotations

import pytest
from formatcheck_turns import LS, THINK, bash, check, xml_call

from swe_formatcheck import TOOLSETS, Code, ToolCall, parse_lenient

TOOLS = TOOLSETS["mini_swe_agent_plus"]

HTML = '<ul>\n  <li class="a">1 &lt; 2</li>\n  <br/>\n</ul>\n'


@pytest.mark.parametrize(
    "value",
    [
        "ls",
        "",
        "\n",
        "  def f():\n\treturn 1  \n\n",
        HTML,
        "a < b > c",
        "<thinking> </thinker>",
        "<parameter x>",
        "</parameter",
        "<tool_call",
        "<function_name>",
        "<|not a token|>",
        "\x00\ud800",
        "line\r\nwindows\r\n",
    ],
)
def test_values_are_exact(value: str) -> None:
    verdict = check(
        THINK
        + xml_call("edit_via_str_replace", ("path", "a"), ("old_str", value), ("new_str", value))
    )
    assert verdict.call == ToolCall(
        "edit_via_str_replace", {"path": "a", "old_str": value, "new_str": value}
    )


@pytest.mark.parametrize(
    ("raw", "lenient_reading", "expected"),
    [
        (
            THINK
            + LS.replace("\n</parameter>", "\n<parameter=command>\nrm -rf build\n</parameter>"),
            "command = rm -rf build",
            Code.PARAMETER_UNCLOSED,
        ),
        (
            THINK + LS.replace("</tool_call>", ""),
            "envelope accepted unclosed",
            Code.ENVELOPE_UNCLOSED,
        ),
        (
            THINK + LS[len("<tool_call>\n") : -len("\n</tool_call>")],
            "bare function",
            Code.STRAY_TAG,
        ),
        (
            THINK + LS.replace("ls", "ls\n<parameter=command>\nrm -rf build"),
            "value split",
            Code.DUPLICATE_PARAMETER,
        ),
        (
            THINK + LS.replace("\n</parameter>\n", "\n"),
            "value ends at </function>",
            Code.PARAMETER_UNCLOSED,
        ),
    ],
)
def test_lenient_readings_are_rejected(raw: str, lenient_reading: str, expected: Code) -> None:
    verdict = check(raw)
    assert expected in verdict.codes, lenient_reading
    assert verdict.call is None


def test_parameters_keep_their_order_and_names() -> None:
    raw = THINK + xml_call(
        "edit_via_str_replace", ("new_str", "b"), ("path", "p"), ("old_str", "a")
    )
    call = check(raw).call
    assert call is not None
    assert list(call.arguments) == ["new_str", "path", "old_str"]


def test_second_function_is_checked_too() -> None:
    raw = THINK + LS.replace(
        "</function>\n", "</function>\n" + xml_call("execute_bash", ("x", "1"))[12:-13]
    )
    assert list(check(raw).codes) == [
        Code.MULTIPLE_CALLS,
        Code.UNKNOWN_PARAMETER,
        Code.MISSING_PARAMETER,
    ]


def test_tag_name_without_closing_bracket_is_malformed_and_linear() -> None:
    raw = THINK + "<tool_call>\n<function=" + "a" * 100_000
    codes = check(raw).codes
    assert codes[:2] == (Code.MALFORMED_TAG, Code.STRAY_TEXT)
    assert (
        check(THINK + "<tool_call>\n<function=" + "x" * 300 + ">\n</function>\n</tool_call>").codes[
            0
        ]
        == Code.MALFORMED_TAG
    )


def test_call_markup_in_reasoning_is_flagged_but_other_tags_are_not() -> None:
    assert check("<think>\nuse <b>bold</b>\n</think>\n" + LS).call == bash("ls")
    assert check("<think>\nwrite </parameter> here\n</think>\n" + LS).codes == (
        "call_in_reasoning",
    )


# -- the lenient reading (the lenient-format ablation), which repairs what check_turn rejects

LENIENT_REPAIRS = [
    # (raw turn, the command a forgiving regex parser executes)
    ("<tool_call>\n<function=execute_bash>\n<parameter=command>\nls\n</parameter>\n", "ls"),
    ("Sure.\n<tool_call><function=execute_bash><parameter=command>ls</parameter></function>"
     "</tool_call> bye", "ls"),
    ("<tool_call>\n<function=execute_bash>\n<parameter=command>\nls\n</parameter>\n"
     "<parameter=command>\nrm -rf build\n</parameter>\n</function>\n</tool_call>", "rm -rf build"),
    ("<function=execute_bash>\n<parameter=command>\nls\n</function>", "ls"),  # no envelope
]  # fmt: skip


@pytest.mark.parametrize(("raw", "command"), LENIENT_REPAIRS)
def test_the_lenient_parser_repairs_what_the_strict_check_rejects(raw: str, command: str) -> None:
    assert not check(raw, reasoning="optional").ok
    assert parse_lenient(raw, tools=TOOLS) == bash(command)


@pytest.mark.parametrize(
    "raw",
    [
        "nothing",
        "<tool_call>\n<function=rm>\n<parameter=command>\nls\n</parameter>\n</function>",
        "<tool_call>\n<function=execute_bash>\n</function>\n</tool_call>",  # command missing
        '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n</tool_call>',
    ],
)
def test_the_lenient_parser_still_needs_a_declared_tool_and_its_parameters(raw: str) -> None:
    assert parse_lenient(raw, tools=TOOLS) is None
