"""Correct alternatives by semantics-preserving rewrites of the gold patch (offline judge).

Together with :mod:`swe_curate._leeway` (what the issue leaves open: message text, private
helper names) these are the correct probes of Arctic-SWE §4's question 2.

A suite that fails one of these grades the *implementation* rather than the behaviour the issue
asks for (``over_restrictive``). The rewrites are chosen to be exactly equivalent for ordinary
Python values: renaming locals, swapping adjacent statements with no data dependence and no
side effects, and equivalent expressions (``a < b`` ↔ ``b > a``, ``if c: A else: B`` ↔
``if not c: B else: A``, ``not a == b`` ↔ ``a != b``).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Mapping

from swe_curate._counterfactual import (
    Counterfactual,
    FunctionRewrite,
    Kind,
    longest_block,
    render_variants,
    variants_at_sites,
)
from swe_curate._leeway import rename_private_helpers, vary_messages
from swe_curate._source import ChangedFunction, PatchedTree

_MIRROR: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}
_IMPURE = (
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.NamedExpr,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _pure(node: ast.AST) -> bool:
    """No calls, attribute/item access or binding: evaluation order cannot be observed."""
    return not any(isinstance(child, _IMPURE) for child in ast.walk(node))


def rename_locals(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Rename every plain local variable of the function (never parameters, globals, closures)."""
    node = func.node
    params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    declared = {
        name for n in ast.walk(node) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names
    }
    nested = [
        n
        for n in ast.walk(node)
        if n is not node
        and isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)
    ]
    if nested:
        return  # closures may capture locals by name: stay out of their way
    stores = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    local_names = sorted(stores - params - declared)
    if not local_names:
        return
    mapping = {name: _fresh(name, used) for name in local_names}
    clone = copy.deepcopy(node)
    for n in ast.walk(clone):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
    yield f"renamed locals {', '.join(f'{a}→{b}' for a, b in mapping.items())}", clone


def _fresh(name: str, used: set[str]) -> str:
    candidate = f"{name}_value"
    while candidate in used:
        candidate += "_"
    used.add(candidate)
    return candidate


def reorder_independent(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Swap two adjacent pure assignments that neither read nor write each other's names."""
    for index in range(longest_block(func.node) - 1):

        def select(node: ast.AST) -> bool:
            return isinstance(getattr(node, "body", None), list) and isinstance(
                node, ast.stmt | ast.excepthandler
            )

        def transform(node: ast.AST, index: int = index) -> ast.AST | None:
            body: list[ast.stmt] = node.body  # type: ignore[attr-defined]
            if index + 1 >= len(body):
                return None
            first, second = body[index], body[index + 1]
            if not (func.on_changed_line(first) or func.on_changed_line(second)):
                return None
            if not _independent(first, second):
                return None
            node.body = [*body[:index], second, first, *body[index + 2 :]]  # type: ignore[attr-defined]
            return node

        yield from variants_at_sites(
            func, select, transform, f"swapped statements {index} and {index + 1}"
        )


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    if not (_simple_assign(a) and _simple_assign(b)):
        return False
    writes_a, reads_a = _names(a, ast.Store), _names(a, ast.Load)
    writes_b, reads_b = _names(b, ast.Store), _names(b, ast.Load)
    return not (writes_a & (reads_b | writes_b) or writes_b & reads_a)


def _simple_assign(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Assign):
        return False
    return all(isinstance(t, ast.Name) for t in stmt.targets) and _pure(stmt.value)


def _names(node: ast.AST, ctx: type[ast.expr_context]) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def equivalent_expression(func: ChangedFunction) -> Iterator[tuple[str, ast.AST]]:
    """Mirror pure comparisons, swap if/else branches under a negated test, fold ``not ==``."""

    def is_mirrorable(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in _MIRROR
            and _pure(node)
            and func.on_changed_line(node)
        )

    def mirror(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.Compare)
        return ast.Compare(
            left=node.comparators[0], ops=[_MIRROR[type(node.ops[0])]()], comparators=[node.left]
        )

    yield from variants_at_sites(func, is_mirrorable, mirror, "mirrored comparison at line {line}")

    def is_branching(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.If)
            and bool(node.orelse)
            and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If))
            and func.on_changed_line(node)
        )

    def swap(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.If)
        return ast.If(test=_negate(node.test), body=node.orelse, orelse=node.body)

    yield from variants_at_sites(
        func, is_branching, swap, "swapped branches of the if at line {line}"
    )


def _negate(test: ast.expr) -> ast.expr:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(op=ast.Not(), operand=test)


CORRECT_MUTATORS: dict[str, FunctionRewrite] = {
    "rename_locals": rename_locals,
    "reorder_independent": reorder_independent,
    "equivalent_expression": equivalent_expression,
}


def correct_counterfactuals(
    tree: PatchedTree,
    mutators: Mapping[str, FunctionRewrite] | None = None,
    limit_per_mutator: int = 4,
    *,
    issue: str | None = None,
    others: Mapping[str, str] | None = None,
) -> list[Counterfactual]:
    """Every correct alternative the offline judge writes for this task.

    With the ``issue`` text, also the alternatives that vary what it leaves open: reworded
    error messages it does not state, renamed private helpers it does not name (``others``:
    the other visible source files, which a rename must not break).
    """
    found = render_variants(tree, Kind.CORRECT, mutators or CORRECT_MUTATORS, limit_per_mutator)
    if issue is not None:
        found += vary_messages(tree, issue)[:limit_per_mutator]
        found += rename_private_helpers(tree, issue, others or {})[:limit_per_mutator]
    return found
