"""One meaning per class name across the workspace: no two classes of the libraries and the
application share a name, so an import never hands a reader the other package's class."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def class_definitions(sources: list[Path]) -> dict[str, list[str]]:
    """Class name -> the ``file:line`` of every module-level or nested class of that name."""
    found: dict[str, list[str]] = defaultdict(list)
    for source in sources:
        for path in sorted(source.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    found[node.name].append(f"{path}:{node.lineno}")
    return found


def duplicates(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: places for name, places in sorted(found.items()) if len(places) > 1}


def test_no_class_name_is_defined_twice_in_the_workspace() -> None:
    sources = sorted(ROOT.glob("packages/*/src")) + sorted(ROOT.glob("apps/*/src"))
    assert len(sources) >= 8, sources  # every member's source tree was found
    twice = duplicates(class_definitions(sources))
    assert not twice, "\n".join(f"{name}: {', '.join(at)}" for name, at in twice.items())


def test_the_check_sees_a_name_defined_in_two_trees(tmp_path: Path) -> None:
    for member in ("one", "two"):
        (tmp_path / member).mkdir()
        (tmp_path / member / "m.py").write_text("class Deck:\n    class Inner: ...\n")
    found = class_definitions([tmp_path / "one", tmp_path / "two"])
    assert set(duplicates(found)) == {"Deck", "Inner"}
