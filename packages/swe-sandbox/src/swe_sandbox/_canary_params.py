"""Where a graded test keeps its expected values: a literal in its body, or a column of its
``pytest.mark.parametrize`` table (what `swe_sandbox._canary` changes to make a must-fail copy).

Only shapes whose every case surely reaches the comparison are taken: a top-level ``assert
<expr> == <expected>`` or ``self.assertEqual(<expr>, <expected>)`` statement (never one nested in
a ``with`` / ``if`` / ``try``, which might not run), and for a parametrized test one plain
``parametrize`` decorator (``ids=`` allowed) whose table holds one-line literals in the column the
comparison reads.
"""

from __future__ import annotations

import ast


def mutable(node: ast.expr) -> bool:
    """A one-line number (negative too), string or bytes literal."""
    if node.lineno != node.end_lineno:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
        if not isinstance(node, ast.Constant) or isinstance(node.value, (str, bytes)):
            return False
    if not isinstance(node, ast.Constant):
        return False
    return isinstance(node.value, (int, float, str, bytes)) and not isinstance(node.value, bool)


def compared(statement: ast.stmt) -> tuple[ast.expr, ast.expr] | None:
    """``(right, left)`` of ``assert left == right``, or ``(second, first)`` of a
    ``self.assertEqual(first, second)`` call statement."""
    if isinstance(statement, ast.Assert):
        test = statement.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            return test.comparators[0], test.left
        return None
    call = statement.value if isinstance(statement, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("assertEqual", "assertEquals")
        and len(call.args) == 2
        and not call.keywords
    ):
        return call.args[1], call.args[0]
    return None


def body_literal(node: ast.FunctionDef) -> ast.expr | None:
    """The expected literal of the last top-level comparison with one (either order)."""
    found = None
    for statement in node.body:
        pair = compared(statement)
        for expected, other in (pair, pair[::-1]) if pair else ():
            if mutable(expected) and not isinstance(other, (ast.Constant, ast.UnaryOp)):
                found = expected
                break
    return found


def is_parametrize(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith(
        "mark.parametrize"
    )


def table_literals(node: ast.FunctionDef) -> tuple[ast.expr, ...] | None:
    """The expected column of a parametrized test's table, one literal per case, or ``None``
    when the test is not of a shape whose every case compares against that column."""
    tables = [d for d in node.decorator_list if is_parametrize(d)]
    if len(tables) != 1:
        return None
    call = tables[0]
    assert isinstance(call, ast.Call)
    names = _argnames(call.args[0]) if len(call.args) == 2 else None
    if names is None or any(k.arg != "ids" for k in call.keywords):
        return None
    column = _compared_column(node, names)
    values = call.args[1]
    if column is None or not isinstance(values, (ast.List, ast.Tuple)) or not values.elts:
        return None
    found = []
    for case in values.elts:
        if len(names) > 1:
            if not isinstance(case, (ast.Tuple, ast.List)) or len(case.elts) != len(names):
                return None
            case = case.elts[column]
        if not mutable(case):
            return None
        found.append(case)
    return tuple(found)


def _argnames(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _compared_column(node: ast.FunctionDef, names: list[str]) -> int | None:
    """Index of the argument a top-level comparison takes as its expected value — one used
    nowhere else in the test (an argument that is also an input would change both sides)."""
    used = [n.id for s in node.body for n in ast.walk(s) if isinstance(n, ast.Name)]
    for statement in node.body:
        pair = compared(statement)
        for expected, _other in (pair, pair[::-1]) if pair else ():
            if (
                isinstance(expected, ast.Name)
                and expected.id in names
                and used.count(expected.id) == 1
            ):
                return names.index(expected.id)
    return None
