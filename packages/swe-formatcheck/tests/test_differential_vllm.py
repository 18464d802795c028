"""Differential test against vLLM: every turn `check_turn` accepts is executed exactly as checked.

Needs vLLM (``nox -s differential`` builds such an environment); skipped where it is absent, as
in the ordinary test environment. The generator and the comparison live in
`swe_formatcheck.strategies` (`generate_turn`) / `differential_vllm`, which the script mode
shares.
"""

from __future__ import annotations

import random
import sys

import pytest

pytest.importorskip("vllm", reason="the differential test needs vLLM (nox -s differential)")

import differential_vllm as dv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import swe_formatcheck._hermes as hermes_module
import swe_formatcheck._qwen_xml as qwen_module
import swe_formatcheck._scan as scan_module
from swe_formatcheck.strategies import GeneratedTurn

HEAD = "<think>\nx\n</think>\n\n<tool_call>\n<function=execute_bash>\n<parameter=command>\n"
TAIL = "\n</parameter>\n</function>\n</tool_call>"


@pytest.fixture(scope="module")
def stack() -> dv.VllmStack:
    return dv.VllmStack()


def _turn(raw: str) -> GeneratedTurn:
    return GeneratedTurn(raw, "qwen3_coder", dv.TOOLS, "required", False, "adversarial", "none")


def _compare_all(stack: dv.VllmStack, turn: GeneratedTurn) -> dict[str, str | None]:
    verdict = dv.check(turn)
    assert verdict.ok
    return {
        configuration: dv.mismatch(
            turn,
            verdict,
            stack.parse(configuration, turn),
            reasoning_parser="+" in configuration,
        )
        for configuration in stack.configurations(turn.dialect)
    }


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,  # a seeded run: the same turns every time
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False), st.sampled_from(["qwen3_coder", "hermes"]))
def test_accepted_turns_execute_exactly_as_checked(
    stack: dv.VllmStack, rng: random.Random, dialect: str
) -> None:
    turn = dv.generate_turn(rng, dialect)
    if not dv.check(turn).ok:
        return
    assert _compare_all(stack, turn) == dict.fromkeys(stack.configurations(dialect))


@pytest.mark.parametrize(
    "value",
    ["echo '<parameter = x>'", "echo 'a</ parameter>b'", "a</parameter >b", "a<\t/parameter>b"],
)
def test_the_reported_class_is_real_in_this_vllm_and_rejected(
    stack: dv.VllmStack, value: str
) -> None:
    """vLLM really executes these differently; `check_turn` rejects them."""
    turn = _turn(HEAD + value + TAIL)
    _, calls = stack.parse("qwen3_coder+qwen3", turn)
    assert calls is not None
    assert [c.arguments for c in calls] != ['{"command": ' + dv.json.dumps(value) + "}"]
    assert dv.check(turn).codes == ("ambiguous_markup",)


@pytest.mark.parametrize("text", ["a<|im_end|>b", "a</think>b"])
def test_deleted_text_is_real_in_this_vllm_and_rejected(stack: dv.VllmStack, text: str) -> None:
    turn = _turn(HEAD + text + TAIL)
    _, calls = stack.parse("qwen3_coder+qwen3", turn)
    assert calls is not None
    assert [c.arguments for c in calls] == ['{"command": "ab"}']
    assert not dv.check(turn).ok


def test_the_generator_reaches_the_class(
    stack: dv.VllmStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the new rule switched off, the same generator finds turns vLLM executes differently
    within a few hundred turns: the property above is not vacuous."""
    monkeypatch.setattr(qwen_module, "find_in_value", lambda *args, **kwargs: None)
    monkeypatch.setattr(scan_module, "find_in_value", lambda *args, **kwargs: None)
    monkeypatch.setattr(hermes_module, "find_in_json", lambda *args, **kwargs: None)
    counts: dict[str, dv.Counts] = {}
    for dialect in ("qwen3_coder", "hermes"):
        dv.run(stack, random.Random(f"teeth:{dialect}"), dialect, 600, counts)
    assert counts["qwen3_coder"].mismatched > 0
    assert counts["hermes+qwen3"].mismatched > 0


def test_the_parsers_whitespace_is_inside_the_rejected_class() -> None:
    """vLLM matches tags with the `regex` module's ``\\s``; `check_turn` takes ``str.isspace``."""
    import regex

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if regex.match(r"\s", chr(c))]
    assert spaces
    assert all(char.isspace() for char in spaces)
