"""The README example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

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
