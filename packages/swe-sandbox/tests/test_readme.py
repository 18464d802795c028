"""The README's example runs as written and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
#: The runnable python blocks (an ``<!-- illustration -->`` / ``<!-- slow -->`` line above a
#: fence marks one that cannot run in the ordinary suite).
PYTHON = [
    code
    for marker, code in re.findall(
        r"(<!-- \w+ -->\n)?```python\n(.*?)```", README.read_text(), flags=re.DOTALL
    )
    if not marker
]


@pytest.mark.skipif(os.geteuid() != 0, reason="the example uses the namespace backend (root)")
def test_example_runs_and_prints_the_rewards(rootfs: Path) -> None:
    assert len(PYTHON) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(PYTHON[0], str(README), "exec"), {"__name__": "readme"})
    lines = out.getvalue().split()
    assert lines == ["pkg", "0", "1"]
