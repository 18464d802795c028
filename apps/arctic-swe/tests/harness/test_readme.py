"""Runs the README's harness example exactly as written (real deck, real namespace sandbox)."""

import re
from pathlib import Path

import pytest

from swe_sandbox import NamespaceBackend

README = Path(__file__).parents[2] / "README.md"
HEADING = "### Example (runs as written; `tests/harness/test_readme.py` executes it)"


def _example() -> str:
    text = README.read_text()
    start = text.index(HEADING)
    match = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    assert match is not None
    return match.group(1)


def test_readme_example_runs(backend: NamespaceBackend, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(_example(), str(README), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "submitted 1.0" in out
    assert "submitted 0.0" in out
