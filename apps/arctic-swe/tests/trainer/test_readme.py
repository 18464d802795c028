"""Runs the trainer example of ``docs/trainer.md`` exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "docs" / "trainer.md"
HEADING = "## Trainer example (runs as written; `tests/trainer/test_readme.py` executes it)"


def test_readme_trainer_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text()
    match = re.search(r"```python\n(.*?)```", text[text.index(HEADING) :], re.DOTALL)
    assert match is not None
    exec(compile(match.group(1), str(README), "exec"), {"__name__": "__readme__"})
    assert re.search(r"step 3: loss -?\d", capsys.readouterr().out)
