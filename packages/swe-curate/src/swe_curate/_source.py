"""The gold patch seen as source: which functions it changed, and how to splice a rewritten
function back into its file. Shared by the offline judge's mutators and by bug injection."""

from __future__ import annotations

import ast
import difflib
import textwrap
from collections.abc import Iterator, Mapping

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._diff import apply_patch, make_patch, touched_paths
from swe_curate._errors import MutationError

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@attrs.frozen
class ChangedFunction:
    """A function (or method) of a patched file whose body the gold patch touched."""

    path: str
    qualname: str
    node: FunctionNode
    changed_lines: frozenset[int]
    """1-based line numbers (in the patched file) that the gold patch added or replaced."""

    def on_changed_line(self, node: ast.AST) -> bool:
        """Whether ``node``'s span overlaps a line the gold patch changed."""
        start = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None) or start
        if start is None or end is None:
            return False
        return any(line in self.changed_lines for line in range(start, end + 1))


@attrs.define
class PatchedTree:
    """The buggy pre-image and gold post-image of every Python file a patch touches."""

    buggy: dict[str, str]
    gold: dict[str, str]

    @classmethod
    def from_patch(cls, buggy_files: Mapping[str, str], gold_patch: str) -> PatchedTree:
        """Apply ``gold_patch`` to the touched files of ``buggy_files`` (raises on mismatch)."""
        wanted = {p: buggy_files[p] for p in touched_paths(gold_patch) if p in buggy_files}
        gold = apply_patch(buggy_files, gold_patch)
        return cls(buggy=wanted, gold=gold)

    def patch_to(self, files: Mapping[str, str]) -> str:
        """A patch from the buggy tree to ``files`` (a full replacement of the gold files)."""
        return make_patch(self.buggy, files)

    def changed_functions(self) -> list[ChangedFunction]:
        """Innermost functions of the gold post-image that overlap changed lines."""
        found: list[ChangedFunction] = []
        for path, gold_text in sorted(self.gold.items()):
            if not path.endswith(".py"):
                continue
            try:
                module = parse_source(gold_text)
            except SyntaxError as exc:
                raise MutationError(f"{path}: gold post-image does not parse: {exc}") from exc
            changed = changed_lines(self.buggy.get(path, ""), gold_text)
            for qualname, node in iter_functions(module):
                if not _overlaps(node, changed):
                    continue
                inner = any(
                    _overlaps(child, changed)
                    for child in ast.walk(node)
                    if child is not node and isinstance(child, FunctionNode)
                )
                if not inner:
                    found.append(ChangedFunction(path, qualname, node, changed))
        return found


def changed_lines(old: str, new: str) -> frozenset[int]:
    """1-based lines of ``new`` that differ from ``old`` (a deletion marks its neighbour)."""
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    lines: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(range(j1 + 1, j2 + 1))
        elif tag == "delete":
            lines.update({max(j1, 1), j1 + 1})
    return frozenset(lines)


def _overlaps(node: ast.AST, lines: frozenset[int]) -> bool:
    start = getattr(node, "lineno", 0)
    end = getattr(node, "end_lineno", start)
    return any(line in lines for line in range(start, end + 1))


def iter_functions(module: ast.Module) -> Iterator[tuple[str, FunctionNode]]:
    """Every function and method with its dotted qualname (``Class.method``, ``outer.inner``)."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, FunctionNode]]:
        for stmt in body:
            if isinstance(stmt, FunctionNode):
                name = prefix + stmt.name
                yield name, stmt
                yield from walk(stmt.body, name + ".")
            elif isinstance(stmt, ast.ClassDef):
                yield from walk(stmt.body, prefix + stmt.name + ".")

    yield from walk(module.body, "")


def find_function(module: ast.Module, qualname: str) -> FunctionNode | None:
    """The function with this qualname, or ``None``."""
    return next((node for name, node in iter_functions(module) if name == qualname), None)


def splice_function(source: str, old: FunctionNode, new: FunctionNode) -> str:
    """Replace ``old`` (decorators included) in ``source`` with the unparsed ``new``.

    Only the function's own lines are rewritten, so comments and formatting elsewhere in the
    file survive. Raises :class:`MutationError` if the result does not parse.
    """
    lines = source.splitlines(keepends=True)
    start = min([old.lineno, *(d.lineno for d in old.decorator_list)]) - 1
    end = old.end_lineno or old.lineno
    indent = " " * old.col_offset
    body = textwrap.indent(ast.unparse(ast.fix_missing_locations(new)), indent) + "\n"
    result = "".join([*lines[:start], body, *lines[end:]])
    try:
        parse_source(result)
    except SyntaxError as exc:  # pragma: no cover - unparse output of a valid tree parses
        raise MutationError(f"spliced function {new.name!r} does not parse: {exc}") from exc
    return result


def same_program(a: str, b: str) -> bool:
    """Whether two sources have the same AST (formatting and comments ignored)."""
    try:
        return ast.dump(parse_source(a)) == ast.dump(parse_source(b))
    except SyntaxError:
        return a == b
