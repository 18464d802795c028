"""The README's example runs as written and prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_example_runs_as_written() -> None:
    text = README.read_text()
    example = re.search(r"## Example\n\n```python\n(.*?)```", text, re.DOTALL)
    assert example is not None
    completed = subprocess.run(
        [sys.executable, "-c", example.group(1)], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "gpu0 completed ((0, 2), (1, 2)) 1"
    assert f"prints `{completed.stdout.strip()}`" in text
