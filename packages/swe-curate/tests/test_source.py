"""Gold patch as source: changed lines, changed functions, splicing."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_curate._diff import make_patch
from swe_curate._errors import CuratePatchApplyError
from swe_curate._source import (
    PatchedTree,
    changed_lines,
    find_function,
    iter_functions,
    same_program,
    splice_function,
)

MODULE = """\
import os  # a comment that must survive


class Box:
    @staticmethod
    def size(x):
        return x + 1

    def inner(self):
        def helper(y):
            return y * 2
        return helper(3)


def top(a):
    return a
"""


def test_qualnames_include_methods_and_nested_functions() -> None:
    names = [name for name, _ in iter_functions(ast.parse(MODULE))]
    assert names == ["Box.size", "Box.inner", "Box.inner.helper", "top"]
    node = find_function(ast.parse(MODULE), "Box.inner.helper")
    assert node is not None
    assert node.name == "helper"
    assert find_function(ast.parse(MODULE), "missing") is None


def test_changed_functions_are_the_innermost_touched() -> None:
    gold = MODULE.replace("return y * 2", "return y * 3")
    tree = PatchedTree.from_patch({"m.py": MODULE}, make_patch({"m.py": MODULE}, {"m.py": gold}))
    assert [f.qualname for f in tree.changed_functions()] == ["Box.inner.helper"]


def test_splice_keeps_decorators_comments_and_indentation() -> None:
    module = ast.parse(MODULE)
    old = find_function(module, "Box.size")
    assert old is not None
    new = ast.parse("@staticmethod\ndef size(x):\n    return x + 2\n").body[0]
    assert isinstance(new, ast.FunctionDef)
    result = splice_function(MODULE, old, new)
    assert "# a comment that must survive" in result
    assert "        return x + 2" in result
    assert result.count("@staticmethod") == 1
    assert not same_program(result, MODULE)


@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=12),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=12),
)
def test_changed_lines_point_into_the_new_text(old: list[str], new: list[str]) -> None:
    lines = changed_lines("\n".join(old), "\n".join(new))
    if old != new and new:
        assert lines
    assert all(1 <= n <= max(len(new), 1) + 1 for n in lines)


def test_a_gold_patch_that_does_not_apply_is_typed() -> None:
    patch = make_patch({"m.py": "x = 1\n"}, {"m.py": "x = 2\n"})
    with pytest.raises(CuratePatchApplyError):
        PatchedTree.from_patch({"m.py": "y = 1\n"}, patch)
