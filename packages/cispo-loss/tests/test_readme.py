"""The README's examples run as written, and the first prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```(python|text)\n(.*?)```", README.read_text(), flags=re.DOTALL)
PYTHON = [code for kind, code in BLOCKS if kind == "python"]


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    return out.getvalue()


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_blocks_run(index: int) -> None:
    _run(PYTHON[index])


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]


def test_example_output_is_what_the_readme_shows() -> None:
    kinds = [kind for kind, _ in BLOCKS]
    shown = BLOCKS[kinds.index("text")][1]
    printed = _run(PYTHON[0])
    # same words; numbers equal to the printed precision (BLAS blocking may differ by an ulp)
    assert re.sub(r"-?\d+\.\d+", "#", printed) == re.sub(r"-?\d+\.\d+", "#", shown)
    assert _numbers(printed) == pytest.approx(_numbers(shown), abs=2e-4)
