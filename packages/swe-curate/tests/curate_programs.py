"""Hypothesis strategy for small (buggy, gold) function pairs, shared by the mutator tests.

Gold is a random straight-line/branching integer function of ``a`` and ``b``; buggy is gold
with one statement's constant changed, which is what a one-line bug fix looks like.
"""

from __future__ import annotations

from hypothesis import strategies as st

_CMP = ["<", "<=", ">", ">=", "==", "!="]
_OPS = ["+", "-", "*"]


@st.composite
def expressions(draw: st.DrawFn, names: list[str]) -> str:
    left = draw(st.sampled_from(names))
    op = draw(st.sampled_from(_OPS))
    right = draw(st.one_of(st.sampled_from(names), st.integers(0, 9).map(str)))
    return f"{left} {op} {right}"


@st.composite
def statements(draw: st.DrawFn, names: list[str], target: str) -> str:
    if draw(st.booleans()):
        return f"    {target} = {draw(expressions(names))}\n"
    left = draw(st.sampled_from(names))
    cmp = draw(st.sampled_from(_CMP))
    bound = draw(st.integers(0, 9))
    then = draw(expressions(names))
    other = draw(expressions(names))
    if draw(st.booleans()):
        return (
            f"    if {left} {cmp} {bound}:\n        {target} = {then}\n"
            f"    else:\n        {target} = {other}\n"
        )
    extra = draw(st.sampled_from(names))
    return (
        f"    {target} = {other}\n"
        f"    if {left} {cmp} {bound} and {extra} != {bound + 1}:\n        {target} = {then}\n"
    )


@st.composite
def program_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """(buggy source, gold source) of ``def f(a, b)`` in a module with a comment and a helper."""
    names = ["a", "b"]
    body: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        target = f"v{i}"
        body.append(draw(statements(names, target)))
        names.append(target)
    ret = draw(expressions(names))
    gold_body = [*body, f"    return {ret}\n"]
    fixed = draw(st.integers(0, len(gold_body) - 1))
    buggy_body = list(gold_body)
    buggy_body[fixed] = _break(gold_body[fixed])
    head = "# module comment kept by splicing\n\n\ndef helper(x):\n    return x\n\n\ndef f(a, b):\n"
    return head + "".join(buggy_body), head + "".join(gold_body)


def _break(line: str) -> str:
    for digit in "0123456789":
        if digit in line:
            return line.replace(digit, str((int(digit) + 3) % 10), 1)
    return line.replace("return ", "return 1 + ", 1) if "return" in line else line + "    a = a\n"
