"""The README examples run as written and print what they say."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_example_runs_as_written() -> None:
    block = re.search(r"## Example\n\n```python\n(.*?)```", README, re.DOTALL)
    assert block is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README.md", "exec"), {})
    assert out.getvalue().splitlines() == [
        "(<Code.DUPLICATE_PARAMETER: 'duplicate_parameter'>,)",
        "True invalid_format 0.0",
    ]


def _section_blocks(heading: str) -> list[str]:
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def _run(block: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    return out.getvalue().splitlines()


def test_the_parser_example_catches_the_naive_parser() -> None:
    """Without vLLM (as here) the example runs the naive parser, and the harness catches its
    duplicate-parameter reading: `ls` executed as `rm -rf build`. (The section's second block,
    a plain ``@given`` test, runs in integration_tests/test_readme_examples.py.)"""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("with vLLM installed the example checks vLLM's parser instead")
    harness, _strategies = _section_blocks("Property-testing your own parser")
    lines = _run(harness)
    assert lines[0] == "naive regex parser agrees with the strict rule: False"
    labels = ast.literal_eval(lines[1])
    assert {"duplicate_parameter", "bare_function", "unknown_function"} <= set(labels)
    assert lines[2] == "executed_rejected_turn [malformed: duplicate_parameter]"
    assert lines[4:] == [
        "  strict: rejected ['duplicate_parameter']",
        "  parser: [ToolCall(name='execute_bash', arguments={'command': 'rm -rf build'})]",
    ]
