"""Tests for ``arctic_swe.deck._issues``: what each issue style states, and what it never does."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe.deck import DeckConfig, DeckConfigError, generate_tasks, make_function
from arctic_swe.deck._functions import evaluate, inject_bug
from arctic_swe.deck._issues import IssueFacts, call_function, write_issue
from arctic_swe.deck._repo import GeneratedTask

_BULLET = re.compile(
    r"^- `(\w+)\(([-\d, ]*)\)` returns (-?\d+), (?:expected (-?\d+)|which is correct)$"
)
_ASSERT = re.compile(r"^    assert (\w+)\(([-\d, ]*)\) == (-?\d+)$")


def _run(module: str, name: str, args: tuple[int, ...]) -> int:
    """Import-free reference: execute the module text with ordinary builtins and call."""
    namespace: dict[str, object] = {}
    exec(module, namespace)
    value = namespace[name](*args)  # type: ignore[operator]
    assert isinstance(value, int)
    return value


def _args(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(", ")) if text else ()


def _check_behaviour_issue(task: GeneratedTask) -> None:
    issue = task.issue
    buggy_expr = task.old_line.removeprefix("return ")
    fixed_expr = task.new_line.removeprefix("return ")
    for secret in (task.old_line, task.new_line, buggy_expr, fixed_expr):
        assert secret not in issue, (secret, issue)
    test_id = task.fail_to_pass[0]
    name = test_id.split("::test_")[1]
    assert issue.startswith(f"`{name}` in `{task.bug_path}` ")
    assert f"`{test_id}`" in issue
    buggy = task.files[task.bug_path]
    fixed = buggy.replace(task.old_line, task.new_line)
    stated: list[tuple[tuple[int, ...], int, int]] = []
    for line in issue.splitlines():
        if line.startswith("- "):
            match = _BULLET.match(line)
            assert match is not None, line
            assert match.group(1) == name
            args = _args(match.group(2))
            got = int(match.group(3))
            want = got if match.group(4) is None else int(match.group(4))
            assert got == _run(buggy, name, args)
            assert want == _run(fixed, name, args)
            assert (match.group(4) is None) == (got == want)
            stated.append((args, got, want))
    assert any(got != want for _, got, want in stated)
    # the inputs are exactly the failing test's, and "expected" is what the test asserts
    graded = task.files[task.graded_file]
    asserted = [
        (_args(m.group(2)), int(m.group(3)))
        for m in map(_ASSERT.match, graded.splitlines())
        if m is not None and m.group(1) == name
    ]
    assert [(args, want) for args, _, want in stated] == asserted


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_no_behaviour_issue_quotes_either_line_and_every_value_is_run(seed: int) -> None:
    config = DeckConfig(
        seed, pool_size=6, heldout_size=3, warmstart_size=3, issue_style="behaviour"
    )
    for tasks in generate_tasks(config).values():
        for task in tasks:
            _check_behaviour_issue(task)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_a_line_issue_quotes_both_lines(seed: int) -> None:
    config = DeckConfig(seed, pool_size=4, heldout_size=0, warmstart_size=0)
    for task in generate_tasks(config)["pool"]:
        assert f"The line `{task.old_line}` should be `{task.new_line}`." in task.issue


@given(seed=st.integers(min_value=0, max_value=2**32))
def test_call_function_runs_the_source_as_the_expression_evaluates(seed: int) -> None:
    rng = random.Random(seed)
    spec = inject_bug(rng, make_function(rng, "f"))
    if spec is None:
        return
    assert spec.buggy_expr is not None
    for args, want in spec.cases:
        assert call_function(spec.source(buggy=False), "f", args) == want
        got = call_function(spec.source(buggy=True), "f", args)
        assert got == evaluate(spec.buggy_expr, spec.params, args)


def test_call_function_rejects_a_non_int() -> None:
    with pytest.raises(TypeError, match="not an int"):
        call_function("def f(x):\n    return x > 0\n", "f", (1,))


def test_an_unknown_style_is_a_config_error() -> None:
    spec = make_function(random.Random(0), "f")
    facts = IssueFacts("p/m.py", spec, "", "", "return 1", "return 2", "t::test_f")
    with pytest.raises(DeckConfigError, match="issue_style"):
        write_issue("verbose", facts)


def _plain_blocks(markdown: str) -> list[str]:
    """The contents of the fenced blocks without a language, fences paired in order (a fence
    with a language opens a block its bare closing fence ends)."""
    blocks: list[str] = []
    lines: list[str] | None = None
    plain = False
    for line in markdown.splitlines(keepends=True):
        if not line.startswith("```"):
            if lines is not None:
                lines.append(line)
        elif lines is None:
            lines, plain = [], line.strip() == "```"
        else:
            if plain:
                blocks.append("".join(lines))
            lines = None
    return blocks


@pytest.mark.parametrize("doc", ["docs/harness-and-deck.md", "README.md"])
def test_the_documented_examples_are_what_the_generator_writes(doc: str) -> None:
    text = (Path(__file__).resolve().parents[2] / doc).read_text()
    blocks = _plain_blocks(text)
    for style in ("line", "behaviour"):
        config = DeckConfig(0, pool_size=2, heldout_size=0, warmstart_size=0, issue_style=style)
        issue = generate_tasks(config)["pool"][1].issue
        assert issue in blocks, style
