"""The special-casing shortcut: keep the bug, hard-code the answers the tests check.

This is the textbook wrong patch a loose suite rewards (paper §4: "a plausible wrong patch
that passes"): for every ``assert f(<literals>) == <literal>`` (or ``assertEqual``) in the
tests, the buggy ``f`` gets a guard returning the expected literal for exactly those inputs.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping

from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._source import PatchedTree, find_function, splice_function


def special_case_test_values(
    tree: PatchedTree, test_sources: Mapping[str, str]
) -> list[Counterfactual]:
    """Keep the buggy function, but hard-code the answers the tests check.

    For each changed function ``f`` and each ``assert f(<literals>) == <literal>`` (or
    ``assertEqual(f(...), ...)``) in the tests, prepend ``if (args) == (values): return
    expected`` to the *buggy* version of ``f``. This is the textbook shortcut a loose suite
    rewards: it passes exactly the checked inputs and nothing else.
    """
    out: list[Counterfactual] = []
    for func in tree.changed_functions():
        buggy_text = tree.buggy.get(func.path)
        if buggy_text is None:
            continue
        buggy_module = ast.parse(buggy_text)
        buggy_func = find_function(buggy_module, func.qualname)
        if buggy_func is None:
            continue
        cases = _checked_calls(func.node.name, test_sources)
        guards = [g for g in (_guard(buggy_func, args, kw, exp) for args, kw, exp in cases) if g]
        if not guards:
            continue
        new_func = copy.deepcopy(buggy_func)
        new_func.body = [*_after_docstring(new_func.body, guards)]
        new_text = splice_function(buggy_text, buggy_func, new_func)
        files = {**tree.gold, func.path: new_text}
        out.append(
            Counterfactual(
                Kind.WRONG,
                "special_case_test_values",
                f"{func.qualname}: buggy code plus {len(guards)} hard-coded test answer(s)",
                tree.patch_to(files),
            )
        )
    return out


def _after_docstring(body: list[ast.stmt], inserted: list[ast.stmt]) -> list[ast.stmt]:
    has_doc = (
        bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    )
    return [*body[:1], *inserted, *body[1:]] if has_doc else [*inserted, *body]


Call = tuple[list[ast.expr], dict[str, ast.expr], ast.expr]


def _checked_calls(name: str, test_sources: Mapping[str, str]) -> list[Call]:
    calls: list[Call] = []
    for text in test_sources.values():
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(module):
            pair = _assert_pair(node)
            if pair is None:
                continue
            call, expected = pair
            if _called_name(call) == name and _all_literal(
                [*call.args, *(k.value for k in call.keywords), expected]
            ):
                kwargs = {k.arg: k.value for k in call.keywords if k.arg is not None}
                calls.append((list(call.args), kwargs, expected))
    return calls


def _assert_pair(node: ast.AST) -> tuple[ast.Call, ast.expr] | None:
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        cmp = node.test
        if len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Eq | ast.Is):
            left, right = cmp.left, cmp.comparators[0]
            if isinstance(left, ast.Call):
                return left, right
            if isinstance(right, ast.Call):
                return right, left
    if isinstance(node, ast.Call) and _called_name(node) in {
        "assertEqual",
        "assertEquals",
        "assertIs",
    }:
        if len(node.args) >= 2 and isinstance(node.args[0], ast.Call):
            return node.args[0], node.args[1]
        if len(node.args) >= 2 and isinstance(node.args[1], ast.Call):
            return node.args[1], node.args[0]
    return None


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _all_literal(nodes: list[ast.expr]) -> bool:
    for node in nodes:
        try:
            ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return True


def _guard(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    args: list[ast.expr],
    kwargs: dict[str, ast.expr],
    expected: ast.expr,
) -> ast.stmt | None:
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if params and params[0] in {"self", "cls"}:
        params = params[1:]
    if len(args) > len(params):
        return None
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            return None
        bound[key] = value
    if not bound:
        return ast.Return(value=copy.deepcopy(expected))
    names = ast.Tuple(elts=[ast.Name(id=k, ctx=ast.Load()) for k in bound], ctx=ast.Load())
    values = ast.Tuple(elts=[copy.deepcopy(v) for v in bound.values()], ctx=ast.Load())
    # Compare by type *and* value so that 1 == 1.0 == True do not collapse into one case.
    test = ast.Compare(
        left=ast.Tuple(
            elts=[
                ast.Tuple(elts=[ast.Call(ast.Name("type", ast.Load()), [n], []), n], ctx=ast.Load())
                for n in names.elts
            ],
            ctx=ast.Load(),
        ),
        ops=[ast.Eq()],
        comparators=[
            ast.Tuple(
                elts=[
                    ast.Tuple(
                        elts=[ast.Call(ast.Name("type", ast.Load()), [v], []), v], ctx=ast.Load()
                    )
                    for v in values.elts
                ],
                ctx=ast.Load(),
            )
        ],
    )
    return ast.If(test=test, body=[ast.Return(value=copy.deepcopy(expected))], orelse=[])
