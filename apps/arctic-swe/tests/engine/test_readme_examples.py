"""The "Policy model" and "Torch engine" examples of docs/engine.md (the app README's reference
page for both) run as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "docs" / "engine.md"


def _section_examples(title: str) -> list[str]:
    text = README.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("title", ["Policy model", "Torch engine"])
def test_readme_example_runs(title: str, tmp_path: Path) -> None:
    examples = _section_examples(title)
    assert examples, f"no python example under '## {title}'"
    for index, code in enumerate(examples):
        script = tmp_path / f"example_{index}.py"
        script.write_text(code)
        runpy.run_path(str(script), run_name="__main__")
