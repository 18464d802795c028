"""The special-casing shortcut: keep the bug, hard-code the issue's own worked example.

An agent reads the issue and the visible repository, never the withheld tests, so the shortcut
it can plausibly take is to make exactly the example the issue states come out right (Arctic-SWE
§4: "a plausible wrong patch"). For every example ``f(<literals>)`` the issue states with a value
or an exception, the *buggy* ``f`` gets a guard returning that value (or raising that error) for
exactly those arguments; everything else keeps the bug.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Sequence

from swe_curate._ast_safe import parse_source
from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._issue import IssueExample
from swe_curate._source import PatchedTree, find_function, splice_function

MUTATOR = "special_case_issue_example"


def special_case_issue_examples(
    tree: PatchedTree, examples: Sequence[IssueExample]
) -> list[Counterfactual]:
    """The buggy code plus one guard per example the issue states for a changed function."""
    out: list[Counterfactual] = []
    for func in tree.changed_functions():
        buggy_text = tree.buggy.get(func.path)
        if buggy_text is None:
            continue
        buggy_func = find_function(parse_source(buggy_text), func.qualname)
        if buggy_func is None:
            continue
        mine = [e for e in examples if e.function == func.node.name]
        guards = [g for g in (_guard(buggy_func, e) for e in mine) if g is not None]
        if not guards:
            continue
        new_func = copy.deepcopy(buggy_func)
        new_func.body = [*_after_docstring(new_func.body, guards)]
        new_text = splice_function(buggy_text, buggy_func, new_func)
        files = {**tree.gold, func.path: new_text}
        out.append(
            Counterfactual(
                Kind.WRONG,
                MUTATOR,
                f"{func.qualname}: buggy code plus the issue's {len(guards)} example(s) hard-coded",
                tree.patch_to(files),
            )
        )
    return out


def _after_docstring(body: list[ast.stmt], inserted: list[ast.stmt]) -> list[ast.stmt]:
    has_doc = (
        bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    )
    return [*body[:1], *inserted, *body[1:]] if has_doc else [*inserted, *body]


def _outcome(example: IssueExample) -> ast.stmt | None:
    if example.raises is None:
        return ast.Return(value=parse_source(example.value or "None", mode="eval").body)
    if not isinstance(getattr(builtins, example.raises, None), type):
        return None  # an exception class the buggy module may not have in scope
    error = ast.Call(ast.Name(example.raises, ast.Load()), [ast.Constant("invalid input")], [])
    return ast.Raise(exc=error, cause=None)


def _guard(func: ast.FunctionDef | ast.AsyncFunctionDef, example: IssueExample) -> ast.stmt | None:
    outcome = _outcome(example)
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if params and params[0] in {"self", "cls"}:
        params = params[1:]
    args = [parse_source(repr(a), mode="eval").body for a in example.arguments()]
    if outcome is None or len(args) > len(params):
        return None
    bound = dict(zip(params, args, strict=False))
    if not bound:
        return outcome
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
    return ast.If(test=test, body=[outcome], orelse=[])
