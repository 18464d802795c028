"""The import-graph rule of ``arctic_swe``: layers never point up.

Every module under ``src/arctic_swe`` is parsed with :mod:`ast`; every ``import`` and
``from ... import`` counts, wherever it sits (module level, inside a function, under
``if TYPE_CHECKING``), relative ones resolved against the importing module. Three rules:

1. **Layers.** A sub-package imports only from its own layer or the layers below it
   (:data:`LAYERS`, low -> high). ``cli`` is on top: nothing below imports it.
2. **No circles.** No cycle between sub-packages (same-layer imports are allowed, as long as
   they do not close a circle).
3. **Public faces.** Across sub-packages, import ``arctic_swe.x`` (the names in
   ``x/__init__.__all__``), never ``arctic_swe.x._private`` nor a ``_private`` name. The
   root-level private modules (``arctic_swe._atomic``, ...) are the shared foundation and
   may be imported from anywhere.

A failure prints every offending import as ``file:line: importer -> imported (why)``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "arctic_swe"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

#: The layers of ``arctic_swe``, low -> high. A unit is a sub-package (``config``) or a
#: root-level module (``_cli``); a root-level module not named here is the foundation (L0).
#: A new sub-package must be placed here before the test passes.
LAYERS: tuple[tuple[str, ...], ...] = (
    # L0 foundation: the package root, root-level private modules, the weights format
    (PACKAGE, "weights"),
    # L1: records, formats and configuration
    ("config", "chat", "model", "transfer", "deck", "metrics"),
    # L2: the engines, the trainer, the agent harness
    ("engine", "trainer", "harness"),
    # L3: services and pipelines built on them
    ("distributed", "serve", "warmstart", "evaluate"),
    # L4: the RL loop
    ("orchestrator",),
    # L5: what runs the loop (ablations, the cluster launcher), and the results folders of its runs
    ("ablate", "cluster", "report"),
    # L6: the command line, and the console script's module
    ("cli", "_cli"),
)


@dataclass(frozen=True)
class Import:
    """One imported module (``target``), as written at ``path:line`` of module ``source``."""

    source: str
    target: str
    path: Path
    line: int
    names: tuple[str, ...] = ()  # ``from target import names``; empty for ``import target``

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root.parent)}:{self.line}: {self.source} -> {self.target}"


@dataclass(frozen=True)
class Violation:
    """An import that breaks a rule, with the rule in words."""

    edge: Import
    why: str

    def describe(self, root: Path) -> str:
        return f"{self.edge.where(root)} ({self.why})"


def module_name(path: Path, root: Path) -> str:
    """``root/x/_y.py`` -> ``arctic_swe.x._y``; a package's ``__init__.py`` is the package."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> Iterator[Import]:
    """Every import of the package in ``path``: module level and nested, relative resolved."""
    source = module_name(path, root)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names = tuple(alias.name for alias in node.names)
            if target == root.name:  # ``from arctic_swe import config``: each name is a module
                for name in names:
                    yield Import(source, f"{target}.{name}", path, node.lineno)
            else:
                yield Import(source, target, path, node.lineno, names)


def package_imports(root: Path) -> list[Import]:
    """Every import from the package to itself, over all its modules."""
    return [
        edge
        for path in sorted(root.rglob("*.py"))
        for edge in imports_of(path, root)
        if edge.target == root.name or edge.target.startswith(root.name + ".")
    ]


def unit(module: str) -> str:
    """The unit a module belongs to: its sub-package, its root-level module, or the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(name: str, layers: tuple[tuple[str, ...], ...], root: Path) -> int:
    """The layer index of a unit; a root-level module not in the table is the foundation."""
    for index, members in enumerate(layers):
        if name in members:
            return index
    if (root / f"{name}.py").is_file():
        return 0
    raise LookupError(f"{root.name}.{name} has no layer: add it to LAYERS in {__file__}")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reach(edge: Import, root: Path) -> str | None:
    """What the import reaches inside another sub-package, if it is not its public face."""
    parts = edge.target.split(".")
    if len(parts) < 2 or unit(edge.target) == unit(edge.source):
        return None
    if not (root / parts[1]).is_dir():  # a root-level module: the shared foundation
        return None
    inner = [part for part in parts[2:] if _private(part)]
    if inner:
        return f"private module {inner[0]} of {parts[1]}"
    hidden = [name for name in edge.names if _private(name)]
    if hidden:
        return f"private name {hidden[0]} of {parts[1]}"
    return None


def cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one unit (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(root: Path, layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[Violation]:
    """Every import under ``root`` that points up, closes a circle or reaches a private module."""
    edges = [edge for edge in package_imports(root) if unit(edge.source) != unit(edge.target)]
    found: list[Violation] = []
    for edge in edges:
        low, high = (
            layer_of(unit(edge.source), layers, root),
            layer_of(unit(edge.target), layers, root),
        )
        if high > low:
            found.append(Violation(edge, f"layer {low} imports layer {high}"))
        reach = private_reach(edge, root)
        if reach:
            found.append(Violation(edge, reach))
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(unit(edge.source), set()).add(unit(edge.target))
    for component in cycles(graph):
        # a circle is closed by its imports that do not point down: name those
        circle = " <-> ".join(sorted(component))
        found.extend(
            Violation(edge, f"circle {circle}")
            for edge in edges
            if unit(edge.source) in component
            and unit(edge.target) in component
            and layer_of(unit(edge.target), layers, root)
            >= layer_of(unit(edge.source), layers, root)
        )
    return found


def _report(found: list[Violation], root: Path) -> str:
    return "\n".join(sorted(violation.describe(root) for violation in found))


def test_arctic_swe_layers_never_point_up() -> None:
    found = violations(SOURCE)
    assert not found, "imports breaking the layer rule:\n" + _report(found, SOURCE)


def test_every_sub_package_has_a_layer() -> None:
    packages = {path.parent.name for path in SOURCE.glob("*/__init__.py")}
    placed = {name for members in LAYERS for name in members}
    assert packages <= placed, f"place these in LAYERS: {sorted(packages - placed)}"


# --- the checker itself, on a synthetic package ------------------------------------------------

_TOY_LAYERS: tuple[tuple[str, ...], ...] = (("toy",), ("low",), ("mid", "side"), ("top",))


def _toy(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "toy"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in ("low", "mid", "side", "top"):
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    return root


def _lines(root: Path) -> list[str]:
    return sorted(v.describe(root) for v in violations(root, _TOY_LAYERS))


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    root = _toy(
        tmp_path,
        {
            "_base.py": "",
            "low/_impl.py": "from toy._base import x\n",
            "mid/_a.py": "from toy.low import thing\nfrom . import _b\nfrom ._b import _y\n",
            "mid/_b.py": "",
            "side/_c.py": "import toy.mid\n",
            "top/_d.py": "def f():\n    from toy.mid import y\n    from toy import side\n",
        },
    )
    assert _lines(root) == []


def test_an_upward_import_is_reported_with_its_line(tmp_path: Path) -> None:
    # a function-local import counts like a module-level one
    root = _toy(tmp_path, {"low/_impl.py": "import os\n\ndef f():\n    from toy.top import x\n"})
    assert _lines(root) == [
        "toy/low/_impl.py:4: toy.low._impl -> toy.top (layer 1 imports layer 3)"
    ]


def test_a_relative_upward_import_is_resolved(tmp_path: Path) -> None:
    root = _toy(tmp_path, {"low/_impl.py": "from ..top import x\n"})
    assert _lines(root) == [
        "toy/low/_impl.py:1: toy.low._impl -> toy.top (layer 1 imports layer 3)"
    ]


def test_a_circle_between_same_layer_packages_is_reported(tmp_path: Path) -> None:
    root = _toy(
        tmp_path,
        {"mid/_a.py": "from toy.side import c\n", "side/_c.py": "import toy.mid\n"},
    )
    assert _lines(root) == [
        "toy/mid/_a.py:1: toy.mid._a -> toy.side (circle mid <-> side)",
        "toy/side/_c.py:1: toy.side._c -> toy.mid (circle mid <-> side)",
    ]


def test_a_private_reach_is_reported_but_the_root_foundation_is_not(tmp_path: Path) -> None:
    root = _toy(
        tmp_path,
        {
            "_base.py": "",
            "top/_d.py": (
                "from toy.mid._a import x\nfrom toy.mid import _hidden\nfrom toy._base import y\n"
            ),
            "mid/_a.py": "",
        },
    )
    assert _lines(root) == [
        "toy/top/_d.py:1: toy.top._d -> toy.mid._a (private module _a of mid)",
        "toy/top/_d.py:2: toy.top._d -> toy.mid (private name _hidden of mid)",
    ]


def test_a_package_without_a_layer_fails_loudly(tmp_path: Path) -> None:
    root = _toy(tmp_path, {"new/__init__.py": "", "top/_d.py": "from toy.new import x\n"})
    with pytest.raises(LookupError, match=r"toy\.new has no layer"):
        violations(root, _TOY_LAYERS)
