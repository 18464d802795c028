"""The hermes dialect: strict JSON, duplicate keys rejected at every level."""

from __future__ import annotations

import pytest
from formatcheck_turns import THINK, bash, check

from swe_formatcheck import TOOLSETS, Code, parse_lenient

TOOLS = TOOLSETS["mini_swe_agent_plus"]


def hermes(body: str) -> str:
    return THINK + f"<tool_call>\n{body}\n</tool_call>"


def test_canonical_hermes_call() -> None:
    verdict = check(
        hermes('{"name": "execute_bash", "arguments": {"command": "ls -la"}}'), dialect="hermes"
    )
    assert verdict.call == bash("ls -la")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"name": "execute_bash", "arguments": {"command": "ls"}', [Code.INVALID_JSON]),
        ("", [Code.INVALID_JSON]),
        ('{"name": "execute_bash", "arguments": {"command": Infinity}}', [Code.INVALID_JSON]),
        ("[" * 100_000 + "]" * 100_000, [Code.INVALID_JSON]),
        (
            '{"name": "execute_bash", "arguments": {"command": "' + "9" * 10 + '"}} x',
            [Code.INVALID_JSON],
        ),
        ('["execute_bash"]', [Code.NON_OBJECT_JSON]),
        (
            '{"name": "execute_bash", "arguments": ["ls"]}',
            [Code.NON_OBJECT_JSON, Code.MISSING_PARAMETER],
        ),
        ('{"name": "execute_bash"}', [Code.MALFORMED_CALL, Code.MISSING_PARAMETER]),
        ('{"name": 3, "arguments": {}}', [Code.MALFORMED_CALL]),
        ('{"name": "submit", "arguments": {}, "id": "1"}', [Code.MALFORMED_CALL]),
        (
            '{"name": "execute_bash", "name": "submit", "arguments": {"command": "ls"}}',
            [Code.DUPLICATE_KEY, Code.UNKNOWN_PARAMETER],
        ),
        (
            '{"name": "execute_bash", "arguments": {"command": "ls", "command": "rm -rf build"}}',
            [Code.DUPLICATE_PARAMETER],
        ),
        ('{"name": "execute_bash", "arguments": {"command": 1}}', [Code.NON_STRING_ARGUMENT]),
        (
            '{"name": "execute_bash", "arguments": {"command": "ls", "x": {"a": 1, "a": 2}}}',
            [Code.NON_STRING_ARGUMENT, Code.UNKNOWN_PARAMETER],
        ),
        ('{"name": "grep", "arguments": {}}', [Code.UNKNOWN_FUNCTION]),
    ],
)
def test_hermes_violations(body: str, expected: list[Code]) -> None:
    assert list(check(hermes(body), dialect="hermes").codes) == expected


def test_huge_integer_is_invalid_json_not_an_exception() -> None:
    body = '{"name": "execute_bash", "arguments": {"command": ' + "9" * 100_000 + "}}"
    assert check(hermes(body), dialect="hermes").codes == ("invalid_json",)


def test_envelope_ends_at_the_first_close_tag_like_public_parsers() -> None:
    body = '{"name": "execute_bash", "arguments": {"command": "echo </tool_call>"}}'
    assert Code.INVALID_JSON in check(hermes(body), dialect="hermes").codes


def test_xml_markup_is_plain_text_in_hermes_values() -> None:
    command = "<parameter=x> </function> </ parameter> <tool_call>"
    body = '{"name": "execute_bash", "arguments": {"command": "' + command + '"}}'
    assert check(hermes(body), dialect="hermes").call == bash(command)


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("grep </think> t.jinja", "ambiguous_markup"),
        ("a < THINK >", "ambiguous_markup"),
        ("a<|endoftext|>", "special_token_text"),
    ],
)
def test_reasoning_tags_and_special_tokens_in_hermes_bodies_are_rejected(
    command: str, code: str
) -> None:
    """The reasoning stage in front of the Hermes parser deletes them from the content."""
    body = '{"name": "execute_bash", "arguments": {"command": "' + command + '"}}'
    assert check(hermes(body), dialect="hermes").codes == (code,)
    escaped = body.replace("<", "\\u003c")
    assert check(hermes(escaped), dialect="hermes").call == bash(command)


def test_hermes_structure_errors_outside_the_envelope() -> None:
    body = '{"name": "submit", "arguments": {}}'
    assert check("<tool_call>" + body, dialect="hermes", reasoning="optional").codes == (
        "envelope_unclosed",
    )
    twice = hermes(body) + f"\n<tool_call>{body}</tool_call>"
    assert check(twice, dialect="hermes").codes == ("multiple_calls",)
    assert check(hermes(body) + " thanks", dialect="hermes").codes == ("text_after_call",)


# -- the lenient reading (the lenient-format ablation), which repairs what check_turn rejects

LENIENT_REPAIRS = [
    # (raw turn, the call a forgiving Hermes parser executes)
    ('<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"}}', "ls"),  # unclosed
    ('I will list.\n<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}'
     "</tool_call> done", "ls"),  # text around the call
    ('<tool_call>{"name": "execute_bash", "arguments": {"command": "ls", "command": "rm -rf b"}}'
     "</tool_call>", "rm -rf b"),  # the last duplicate wins
    ('<tool_call>{"name": "execute_bash", "arguments": "{\\"command\\": \\"ls\\"}", "id": 1}'
     "</tool_call>", "ls"),  # arguments as a JSON string, an extra key
    ('{"name": "execute_bash", "arguments": {"command": "ls"}}', "ls"),  # no envelope
    ('<tool_call>{"name": "execute_bash", "arguments": {"command": 7}}</tool_call>', "7"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "command"), LENIENT_REPAIRS)
def test_the_lenient_parser_repairs_what_the_strict_check_rejects(raw: str, command: str) -> None:
    assert not check(raw, dialect="hermes", reasoning="optional").ok
    assert parse_lenient(raw, tools=TOOLS, dialect="hermes") == bash(command)


@pytest.mark.parametrize(
    "raw",
    [
        "no call at all",
        '<tool_call>{"name": "rm", "arguments": {"command": "ls"}}</tool_call>',  # no such tool
        '<tool_call>{"name": "execute_bash", "arguments": {}}</tool_call>',  # required missing
        '<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"</tool_call>',
        "<tool_call>[1, 2]</tool_call>",
    ],
)
def test_the_lenient_parser_still_needs_a_declared_tool_and_its_parameters(raw: str) -> None:
    assert parse_lenient(raw, tools=TOOLS, dialect="hermes") is None
