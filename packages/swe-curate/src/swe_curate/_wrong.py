"""Wrong-but-plausible counterfactuals by mutating the gold patch (the offline judge's probes).

Each mutator keeps the shape of the gold fix and breaks it the way a shortcut-taking agent
would: implement part of the fix (drop a hunk or a statement, weaken a condition), get the edge
the issue specifies wrong (invert a condition, shift a boundary by one, return before the fix
runs), or special-case the example the issue states. Everything is derived from the issue text
and the visible tree (the gold patch is the judge's privilege; the withheld tests are never
read), and mutations sit only on lines the gold patch changed: every probe is a near miss of
the real fix that an agent could have written.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence

from swe_curate._counterfactual import (
    Counterfactual,
    FunctionRewrite,
    Kind,
    longest_block,
    render_variants,
    variants_at_sites,
)
from swe_curate._diff import count_hunks, drop_hunk
from swe_curate._issue import IssueExample
from swe_curate._source import ChangedFunction, PatchedTree
from swe_curate._special_case import special_case_issue_examples

_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_TESTED = (ast.If, ast.While, ast.IfExp, ast.Assert)


def invert_condition(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """``if c`` → ``if not c`` on changed branches and loops."""

    def select(node: ast.AST) -> bool:
        return isinstance(node, _TESTED) and func.on_changed_line(node.test)

    def transform(node: ast.AST) -> ast.AST:
        assert isinstance(node, _TESTED)
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            node.test = test.operand
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            test.ops = [_NEGATED[type(test.ops[0])]()]
        else:
            node.test = ast.UnaryOp(op=ast.Not(), operand=test)
        return node

    yield from variants_at_sites(func, select, transform, "inverted condition at line {line}")


def weaken_condition(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """``a and b`` → ``a`` (each operand dropped in turn); a guarded block made unconditional."""
    widest = max(
        (len(n.values) for n in ast.walk(func.node) if isinstance(n, ast.BoolOp)), default=0
    )
    for drop in range(widest):

        def select(node: ast.AST) -> bool:
            return isinstance(node, ast.BoolOp) and func.on_changed_line(node)

        def transform(node: ast.AST, drop: int = drop) -> ast.AST | None:
            assert isinstance(node, ast.BoolOp)
            if drop >= len(node.values):
                return None
            rest = [v for i, v in enumerate(node.values) if i != drop]
            return rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest)

        yield from variants_at_sites(
            func, select, transform, f"dropped operand {drop} at line {{line}}"
        )

    def select_if(node: ast.AST) -> bool:
        return isinstance(node, ast.If) and not node.orelse and func.on_changed_line(node.test)

    def unguard(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.If)
        node.test = ast.Constant(value=True)
        return node

    yield from variants_at_sites(func, select_if, unguard, "removed the guard at line {line}")


def off_by_one(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Integer constants ±1 and strict/non-strict comparisons swapped, on changed lines."""

    def is_int(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and func.on_changed_line(node)
        )

    for delta in (1, -1):

        def shift(node: ast.AST, delta: int = delta) -> ast.AST:
            assert isinstance(node, ast.Constant)
            assert isinstance(node.value, int)
            node.value = node.value + delta
            return node

        yield from variants_at_sites(
            func,
            is_int,
            shift,
            f"integer constant {delta:+d} at line {{line}}",
        )

    def is_boundary(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in _BOUNDARY
            and func.on_changed_line(node)
        )

    def flip(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.Compare)
        node.ops = [_BOUNDARY[type(node.ops[0])]()]
        return node

    yield from variants_at_sites(func, is_boundary, flip, "boundary shifted at line {line}")


def return_early(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Return before the first changed statement of a block, skipping the fix."""
    returns_value = any(
        isinstance(n, ast.Return) and n.value is not None for n in ast.walk(func.node)
    )

    def select(node: ast.AST) -> bool:
        body = getattr(node, "body", None)
        return isinstance(body, list) and any(
            isinstance(s, ast.stmt) and func.on_changed_line(s) for s in body
        )

    def transform(node: ast.AST) -> ast.AST | None:
        body: list[ast.stmt] = node.body  # type: ignore[attr-defined]
        first = next(i for i, s in enumerate(body) if func.on_changed_line(s))
        if isinstance(body[first], ast.Return):
            return None
        value = _next_return_value(body[first:]) if returns_value else None
        if returns_value and value is None:
            return None
        node.body = [*body[:first], ast.Return(value=value), *body[first:]]  # type: ignore[attr-defined]
        return node

    yield from variants_at_sites(
        func, select, transform, "early return in the block at line {line}"
    )


def _next_return_value(stmts: Sequence[ast.stmt]) -> ast.expr | None:
    for stmt in stmts:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            return copy.deepcopy(stmt.value)
    return None


def drop_statement(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Delete one statement the gold patch added or changed (``pass`` if the block empties)."""
    for index in range(longest_block(func.node)):

        def select(node: ast.AST) -> bool:
            body = getattr(node, "body", None)
            return isinstance(body, list) and isinstance(node, ast.stmt | ast.excepthandler)

        def transform(node: ast.AST, index: int = index) -> ast.AST | None:
            body: list[ast.stmt] = node.body  # type: ignore[attr-defined]
            if index >= len(body) or not func.on_changed_line(body[index]):
                return None
            if isinstance(body[index], ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                return None
            rest = body[:index] + body[index + 1 :]
            node.body = rest or [ast.Pass()]  # type: ignore[attr-defined]
            return node

        yield from variants_at_sites(
            func, select, transform, f"dropped statement {index} of a changed block"
        )


WRONG_MUTATORS: dict[str, FunctionRewrite] = {
    "invert_condition": invert_condition,
    "weaken_condition": weaken_condition,
    "off_by_one": off_by_one,
    "return_early": return_early,
    "drop_statement": drop_statement,
}


def drop_hunks(gold_patch: str) -> list[Counterfactual]:
    """The gold patch with one hunk left out (only when it has several: else it is the bug)."""
    n = count_hunks(gold_patch)
    if n < 2:
        return []
    return [
        Counterfactual(
            Kind.WRONG, "drop_hunk", f"gold patch without hunk {i}", drop_hunk(gold_patch, i)
        )
        for i in range(n)
    ]


def wrong_counterfactuals(
    tree: PatchedTree,
    gold_patch: str,
    examples: Sequence[IssueExample] = (),
    limit_per_mutator: int = 4,
) -> list[Counterfactual]:
    """Every wrong-but-plausible counterfactual the offline judge writes for this task
    (``examples``: what the issue text states, see :func:`swe_curate.issue_examples`)."""
    return [
        *special_case_issue_examples(tree, examples),
        *drop_hunks(gold_patch)[:limit_per_mutator],
        *render_variants(tree, Kind.WRONG, WRONG_MUTATORS, limit_per_mutator),
    ]
