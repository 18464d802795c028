"""Procedural functions with one injectable bug each (the embedded deck's bug family).

Every generated function is a single ``return EXPR`` over its parameters and small integer
constants, so its behaviour is fully described by the expression: the test cases are computed
by evaluating the correct expression, and the bug is one local edit of it (an operator swap, a
constant off by some amount, ``min``/``max`` swapped). The edit is chosen so that at least one
test case distinguishes it, which makes every task fail-to-pass by construction; Pipeline 1
then checks that claim by execution.

Why so narrow: the warm start (rejection-sampled fine-tuning before RL) must teach a
~1M-parameter policy on two CPU cores to fix tasks in minutes. The default (``line``-style)
issue therefore names the file, the function, the wrong line and the expected line, and the fix
is a copy of those two lines — inferable, not guessable. A ``behaviour``-style issue gives the
test inputs with actual and expected outputs instead, and the narrow family keeps that
inferable too: one token of one ``return`` line is wrong (``_issues``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_OPERATORS = ("+", "-", "*")
_TEMPLATES = (
    ("x",),
    ("a", "b"),
    ("a", "b", "c"),
)
_SHAPES = {
    1: ("{p0} {o0} {k0}", "({p0} {o0} {k0}) {o1} {k1}", "{f}({p0}, {k0}) {o0} {k1}"),
    2: ("{p0} {o0} {p1}", "{p0} {o0} {p1} {o1} {k0}", "{f}({p0}, {p1}) {o0} {k0}"),
    3: ("{p0} {o0} {p1} {o1} {p2}", "({p0} {o0} {p1}) {o1} {p2}", "{f}({p0}, {p1}) {o0} {p2}"),
}
_SWAP = {"+": "-", "-": "+", "*": "+", "min": "max", "max": "min"}


@dataclass(frozen=True)
class FunctionSpec:
    """One generated function: ``def name(params): return expr`` and its test cases.

    ``cases`` are ``(arguments, expected)`` pairs of the correct ``expr``; ``buggy_expr`` is the
    injected bug (``None`` for a function left intact).
    """

    name: str
    params: tuple[str, ...]
    expr: str
    cases: tuple[tuple[tuple[int, ...], int], ...]
    buggy_expr: str | None = None

    def source(self, buggy: bool) -> str:
        """The function's source text (the buggy variant when ``buggy`` and a bug exists)."""
        expr = self.buggy_expr if buggy and self.buggy_expr is not None else self.expr
        return f"def {self.name}({', '.join(self.params)}):\n    return {expr}\n"

    def test_source(self) -> str:
        """A pytest function asserting every case (uses only the module's public name)."""
        lines = [f"def test_{self.name}():"]
        for args, expected in self.cases:
            lines.append(f"    assert {self.name}({', '.join(map(str, args))}) == {expected}")
        return "\n".join(lines) + "\n"


def evaluate(expr: str, params: tuple[str, ...], args: tuple[int, ...]) -> int:
    """Value of a generated expression (only names, ints, + - *, min and max occur)."""
    scope: dict[str, object] = {"min": min, "max": max, **dict(zip(params, args, strict=True))}
    value = eval(expr, {"__builtins__": {}}, scope)
    if not isinstance(value, int):
        raise TypeError(f"{expr!r} did not evaluate to an int")
    return value


def make_function(rng: random.Random, name: str) -> FunctionSpec:
    """A random correct function with 4 test cases drawn from small integers."""
    params = rng.choice(_TEMPLATES)
    shape = rng.choice(_SHAPES[len(params)])
    fields = {f"p{i}": p for i, p in enumerate(params)}
    fields.update(
        o0=rng.choice(_OPERATORS),
        o1=rng.choice(_OPERATORS),
        k0=str(rng.randint(2, 9)),
        k1=str(rng.randint(2, 9)),
        f=rng.choice(("min", "max")),
    )
    expr = shape.format(**fields)
    cases = tuple(
        (args, evaluate(expr, params, args))
        for args in (tuple(rng.randint(-5, 12) for _ in params) for _ in range(4))
    )
    return FunctionSpec(name=name, params=params, expr=expr, cases=cases)


def _mutations(expr: str) -> list[str]:
    """Every single-token edit of ``expr`` in the bug family."""
    tokens = expr.replace("(", "( ").replace(")", " )").replace(",", " ,").split()
    found: list[str] = []
    for index, token in enumerate(tokens):
        replacements: list[str] = []
        if token in _SWAP:
            replacements.append(_SWAP[token])
        elif token.isdigit():
            replacements.extend(str(int(token) + delta) for delta in (1, -1, 2))
        for replacement in replacements:
            mutated = [*tokens[:index], replacement, *tokens[index + 1 :]]
            text = " ".join(mutated).replace("( ", "(").replace(" )", ")").replace(" ,", ",")
            found.append(text)
    return found


def inject_bug(rng: random.Random, spec: FunctionSpec) -> FunctionSpec | None:
    """``spec`` with a bug that at least one of its cases detects, or ``None`` if none does."""
    candidates = _mutations(spec.expr)
    rng.shuffle(candidates)
    for buggy in candidates:
        if any(evaluate(buggy, spec.params, args) != want for args, want in spec.cases):
            return FunctionSpec(spec.name, spec.params, spec.expr, spec.cases, buggy)
    return None


def first_failing_case(spec: FunctionSpec) -> tuple[tuple[int, ...], int, int]:
    """The first case the bug breaks: ``(arguments, buggy value, expected value)``."""
    if spec.buggy_expr is None:
        raise ValueError(f"{spec.name} has no bug")
    for args, want in spec.cases:
        got = evaluate(spec.buggy_expr, spec.params, args)
        if got != want:
            return args, got, want
    raise ValueError(f"no case of {spec.name} detects its bug")
