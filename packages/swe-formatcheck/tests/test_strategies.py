"""The public property-testing kit: its turns are what they claim, and its harness catches lenient
parsers while passing the strict one."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swe_formatcheck import TOOLSETS, Code, ToolCall, check_turn
from swe_formatcheck.strategies import (
    GeneratedTurn,
    ParserContractError,
    adversarial_turns,
    check_parser,
    find_mismatch,
    generate_turn,
    malformed_turns,
    near_miss_turns,
    valid_turns,
)

TOOLS = TOOLSETS["mini_swe_agent_plus"]
DIALECTS = ["qwen3_coder", "hermes"]


def _strict(dialect: str = "qwen3_coder") -> object:
    """The package's own strict parser under the harness's default options."""

    def parse(raw: str) -> list[ToolCall] | None:
        verdict = check_turn(raw, tools=TOOLS, dialect=dialect, reasoning="optional")  # type: ignore[arg-type]
        return None if verdict.call is None else [verdict.call]

    return parse


def _keeps_last_duplicate(raw: str) -> list[ToolCall] | None:
    """Strict, except that a duplicated parameter is read the lenient way: the last value wins."""
    verdict = check_turn(raw, tools=TOOLS, reasoning="optional")
    if verdict.codes != (Code.DUPLICATE_PARAMETER,):
        return None if verdict.call is None else [verdict.call]
    name = re.search(r"<function=([^>]*)>", raw)
    assert name is not None
    pairs = re.findall(r"<parameter=([^>]*)>\n(.*?)\n</parameter>", raw, re.DOTALL)
    return [ToolCall(name.group(1), dict(pairs))]


def _accepts_text_outside(raw: str) -> list[ToolCall] | None:
    """Strict, except that prose before or after the envelope is ignored."""
    start, end = raw.find("<tool_call>"), raw.rfind("</tool_call>")
    if 0 <= start < end:
        raw = raw[start : end + len("</tool_call>")]
    verdict = check_turn(raw, tools=TOOLS, reasoning="optional")
    return None if verdict.call is None else [verdict.call]


def _strips_values(raw: str) -> list[ToolCall] | None:
    """Strict, except that every value loses its surrounding whitespace."""
    verdict = check_turn(raw, tools=TOOLS, reasoning="optional")
    if verdict.call is None:
        return None
    arguments = {key: value.strip() for key, value in verdict.call.arguments.items()}
    return [ToolCall(verdict.call.name, arguments)]


# -- the strategies


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=25)
@given(data=st.data())
def test_valid_turns_validate_clean_with_their_call(dialect: str, data: st.DataObject) -> None:
    """(Random declared tools, ``tools=None``, are drawn by test_check_properties.py.)"""
    turn = data.draw(valid_turns(dialect))  # type: ignore[arg-type]
    verdict = turn.verdict()
    assert (turn.kind, turn.expected_codes) == ("valid", ())
    assert verdict.codes == ()
    assert verdict.call == turn.expected_call
    assert verdict.reasoning == turn.expected_reasoning


@settings(max_examples=10)
@given(valid_turns("hermes", think_prefilled=True))
def test_a_prefilled_think_is_never_forbidden(turn: GeneratedTurn) -> None:
    assert turn.think_prefilled
    assert turn.reasoning != "forbidden"
    assert turn.verdict().call == turn.expected_call is not None


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=25)
@given(data=st.data())
def test_malformed_turns_yield_exactly_their_codes(dialect: str, data: st.DataObject) -> None:
    turn = data.draw(malformed_turns(dialect, tools=data.draw(st.sampled_from([TOOLS, None]))))  # type: ignore[arg-type]
    verdict = turn.verdict()
    assert turn.kind == "malformed"
    assert turn.expected_codes
    assert verdict.codes == turn.expected_codes, turn.label
    assert verdict.call is None


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=25)
@given(data=st.data())
def test_near_miss_turns_are_rejected_with_exactly_their_codes(
    dialect: str, data: st.DataObject
) -> None:
    turn = data.draw(near_miss_turns(dialect, tools=data.draw(st.sampled_from([TOOLS, None]))))  # type: ignore[arg-type]
    verdict = turn.verdict()
    assert turn.kind == "near_miss"
    assert turn.expected_codes
    assert verdict.codes == turn.expected_codes, turn.label
    assert verdict.call is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_seeded_generator_is_valid_about_half_of_the_time(dialect: str) -> None:
    rng = random.Random(f"kit:{dialect}")
    turns = [generate_turn(rng, dialect) for _ in range(300)]  # type: ignore[arg-type]
    accepted = sum(turn.verdict().ok for turn in turns)
    assert all(turn.kind == "adversarial" and turn.expected_codes is None for turn in turns)
    assert 0.3 < accepted / len(turns) < 0.8
    assert {"none", "duplicate_parameter", "truncate"} <= {turn.label for turn in turns}
    again = random.Random(f"kit:{dialect}")
    assert generate_turn(again, dialect).raw == turns[0].raw  # type: ignore[arg-type]


@settings(max_examples=20)
@given(adversarial_turns("qwen3_coder", reasoning="forbidden"))
def test_adversarial_turns_keep_a_fixed_reasoning_mode(turn: GeneratedTurn) -> None:
    assert (turn.reasoning, turn.think_prefilled) == ("forbidden", False)
    verdict = turn.verdict()
    assert verdict.reasoning is None or not verdict.ok


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: valid_turns("json"), ValueError),  # type: ignore[arg-type]
        (lambda: valid_turns(3), TypeError),  # type: ignore[arg-type]
        (lambda: near_miss_turns(tools="execute_bash"), TypeError),  # type: ignore[arg-type]
        (lambda: malformed_turns(tools=[]), ValueError),
        (lambda: malformed_turns(tools=[TOOLS[0], TOOLS[0]]), ValueError),
        (lambda: valid_turns(reasoning="sometimes"), ValueError),  # type: ignore[arg-type]
        (lambda: valid_turns(think_prefilled=1), TypeError),  # type: ignore[arg-type]
        (lambda: valid_turns(reasoning="forbidden", think_prefilled=True), ValueError),
        (lambda: adversarial_turns(tools=None), ValueError),  # type: ignore[arg-type]
        (lambda: adversarial_turns(think_prefilled=True), ValueError),
    ],
)
def test_bad_strategy_arguments_raise_at_once(build: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        build()  # type: ignore[operator]


# -- the harness


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_strict_parser_passes(dialect: str) -> None:
    report = check_parser(_strict(dialect), dialect=dialect, max_examples=6)  # type: ignore[arg-type]
    report.assert_ok()
    assert report.ok
    assert report.mismatched == 0
    assert report.turns_checked >= 4 * 5  # hypothesis may stop early on a small search space


def test_a_parser_that_keeps_the_last_duplicate_is_caught() -> None:
    report = check_parser(_keeps_last_duplicate, kinds=["malformed"], max_examples=25)
    assert not report.ok
    (found,) = report.counterexamples  # one label: only duplicates are read leniently
    assert found.problem == "executed_rejected_turn"
    assert found.strict_codes == (Code.DUPLICATE_PARAMETER,)
    assert found.expected_call is None
    assert found.turn.label == "duplicate_parameter"
    with pytest.raises(AssertionError, match="duplicate_parameter"):
        report.assert_ok()


def test_a_parser_that_ignores_text_outside_the_envelope_is_caught() -> None:
    report = check_parser(_accepts_text_outside, kinds=["malformed"], max_examples=40)
    assert report.counterexamples
    # Whatever the mutations put outside the envelope: prose, a stray tag, reasoning blocks.
    outside = {
        Code.TEXT_BEFORE_CALL,
        Code.TEXT_AFTER_CALL,
        Code.STRAY_TAG,
        Code.REASONING_MISPLACED,
        Code.REASONING_DUPLICATE,
    }
    labels = {"prose_before", "prose_after", "stray_close", "reasoning_after", "double_reasoning"}
    for found in report.counterexamples:
        assert found.problem == "executed_rejected_turn"
        assert set(found.strict_codes) <= outside
        assert found.turn.label in labels
    assert report.mismatched >= len(report.counterexamples)


def test_a_parser_that_reads_valid_turns_differently_is_caught() -> None:
    report = check_parser(
        _strips_values, tools=[TOOLS[0]], kinds=["valid"], max_examples=20, shrink=True
    )
    (found,) = report.counterexamples  # shrink=True: the first disagreement, shrunk
    assert found.problem == "misread_valid_turn"
    assert found.strict_codes == ()
    assert found.expected_call is not None
    assert found.parsed != (found.expected_call,)
    assert "misread_valid_turn" in report.describe()


def test_a_raising_parser_rejects_and_is_reported_on_valid_turns() -> None:
    def refuses(raw: str) -> list[ToolCall]:
        raise RuntimeError("no")

    assert check_parser(refuses, kinds=["malformed", "near_miss"], max_examples=5).ok
    (found,) = check_parser(refuses, kinds=["valid"], max_examples=5).counterexamples
    assert (found.parsed, found.error) == ((), "RuntimeError('no')")


def test_find_mismatch_compares_one_turn() -> None:
    raw = "<tool_call>\n<function=submit>\n</function>\n</tool_call>"
    turn = GeneratedTurn(raw, "qwen3_coder", TOOLS, "optional", False, "valid", "valid")
    assert find_mismatch(_strict(), turn) is None  # type: ignore[arg-type]
    found = find_mismatch(lambda raw: None, turn)
    assert found is not None
    assert found.expected_call == ToolCall("submit")


@pytest.mark.parametrize("result", ["submit", [("submit", {})], 3])
def test_a_parser_breaking_the_contract_gets_a_typed_error(result: object) -> None:
    with pytest.raises(ParserContractError):
        check_parser(lambda raw: result, kinds=["valid"], max_examples=3)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"parse": None}, TypeError, "parse"),
        ({"dialect": "json"}, ValueError, "dialect"),
        ({"max_examples": 0}, ValueError, "max_examples"),
        ({"max_examples": True}, TypeError, "max_examples"),
        ({"kinds": ["bogus"]}, ValueError, "kinds"),
        ({"kinds": "valid"}, TypeError, "kinds"),
        ({"kinds": []}, ValueError, "kinds"),
        ({"shrink": "yes"}, TypeError, "shrink"),
        ({"think_prefilled": None}, TypeError, "think_prefilled"),
    ],
)
def test_bad_harness_arguments(
    kwargs: dict[str, object], error: type[Exception], name: str
) -> None:
    arguments: dict[str, object] = {"parse": _strict(), **kwargs}
    with pytest.raises(error, match=name):
        check_parser(**arguments)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="turn"):
        find_mismatch(_strict(), "raw")  # type: ignore[arg-type]


# -- hypothesis stays optional


def test_the_package_never_imports_hypothesis_and_the_kit_names_the_extra() -> None:
    """One fresh interpreter: ``import swe_formatcheck`` leaves hypothesis out of sys.modules;
    then, with hypothesis unimportable, the kit's ImportError says how to install it."""
    code = (
        "import sys, swe_formatcheck\n"
        "print('hypothesis' in sys.modules)\n"
        "sys.modules['hypothesis'] = None  # None in sys.modules: importing it fails\n"
        "try:\n    import swe_formatcheck.strategies\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, message = out.stdout.splitlines()
    assert imported == "False"
    assert "pip install 'swe-formatcheck[testing]'" in message


# ---------------------------------------------------------------- from outside the repository
USER_TESTS = '''
"""A user's own test module: their tool-call parser held to the strict rule."""
import json

from swe_formatcheck import TOOLSETS, ToolCall
from swe_formatcheck.strategies import check_parser

TOOLS = TOOLSETS["mini_swe_agent_plus"]


def my_hermes_parse(raw):
    """The user's parser: the JSON between the tags, whatever surrounds it."""
    start, end = raw.find("<tool_call>"), raw.rfind("</tool_call>")
    if start < 0 or end < 0:
        return None
    call = json.loads(raw[start + len("<tool_call>") : end])
    return [ToolCall(call["name"], call["arguments"])]


def test_my_parser_is_held_to_the_strict_rule():
    report = check_parser(my_hermes_parse, dialect="hermes", max_examples=40)
    assert not report.ok
    assert any(c.problem == "executed_rejected_turn" for c in report.counterexamples)
'''


def test_the_kit_runs_from_a_test_module_outside_the_repository(tmp_path: Path) -> None:
    """``python -I`` in a temporary directory: only the installed package is importable."""
    # the user's own project configuration: without one, pytest would look upwards for one and
    # could adopt a repository's (with its import mode) when the temporary directory lies inside it
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_my_parser.py").write_text(USER_TESTS)
    done = subprocess.run(
        [sys.executable, "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_parser.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
