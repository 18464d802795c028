"""The README's example runs as written (executed, not just parsed)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README has no python example"
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    deck = namespace["deck"]
    assert len(deck.retired) > 0  # type: ignore[attr-defined]
