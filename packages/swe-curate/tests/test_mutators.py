"""Offline-judge mutators on real unified diffs: properties over generated programs (hypothesis)
and hand-written cases for each mutator."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from curate_programs import program_pairs
from hypothesis import given, settings
from hypothesis import strategies as st

from swe_curate._correct import correct_counterfactuals
from swe_curate._counterfactual import Kind
from swe_curate._diff import apply_patch, make_patch
from swe_curate._issue import issue_examples
from swe_curate._source import PatchedTree, same_program
from swe_curate._special_case import special_case_issue_examples
from swe_curate._wrong import wrong_counterfactuals


def _run(source: str, a: int, b: int) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<mutant>", "exec"), namespace)
    try:
        return namespace["f"](a, b)
    except Exception as exc:
        return type(exc).__name__


def _tree(buggy: str, gold: str) -> tuple[PatchedTree, str]:
    patch = make_patch({"pkg/m.py": buggy}, {"pkg/m.py": gold})
    return PatchedTree.from_patch({"pkg/m.py": buggy}, patch), patch


@settings(max_examples=40)
@given(
    pair=program_pairs(),
    inputs=st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)), min_size=8, max_size=8),
)
def test_correct_alternatives_behave_exactly_like_gold(
    pair: tuple[str, str], inputs: list[tuple[int, int]]
) -> None:
    buggy, gold = pair
    if same_program(buggy, gold):
        return
    tree, _ = _tree(buggy, gold)
    for cf in correct_counterfactuals(tree):
        assert cf.kind is Kind.CORRECT
        mutant = apply_patch({"pkg/m.py": buggy}, cf.patch)["pkg/m.py"]
        assert not same_program(mutant, gold)
        assert "# module comment kept by splicing" in mutant
        for a, b in inputs:
            assert _run(mutant, a, b) == _run(gold, a, b), (cf.description, a, b)


@settings(max_examples=40)
@given(pair=program_pairs())
def test_wrong_counterfactuals_apply_to_the_buggy_tree_and_differ_from_both_trees(
    pair: tuple[str, str],
) -> None:
    buggy, gold = pair
    if same_program(buggy, gold):
        return
    tree, patch = _tree(buggy, gold)
    for cf in wrong_counterfactuals(tree, patch):
        assert cf.kind is Kind.WRONG
        mutant = apply_patch({"pkg/m.py": buggy}, cf.patch)["pkg/m.py"]
        ast.parse(mutant)
        assert not same_program(mutant, gold), cf.description
        assert not same_program(mutant, buggy), cf.description


CLAMP_BUGGY = '''\
def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    if x > hi:
        return hi
    return x
'''
CLAMP_GOLD = '''\
def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    if x > hi:
        return hi
    if x < lo and lo <= hi:
        return lo
    return x
'''
CLAMP_TEST = """\
from pkg.m import clamp

def test_low():
    assert clamp(-5, 0, 10) == 0
    assert clamp(-7, -3, 10) == -3
"""
CLAMP_ISSUE = "clamp ignores its lower bound: clamp(-5, 0, 10) returns -5; it should return 0."


def _mutants(kind_filter: str | None = None) -> dict[str, list[str]]:
    tree, patch = _tree(CLAMP_BUGGY, CLAMP_GOLD)
    out: dict[str, list[str]] = {}
    for cf in wrong_counterfactuals(tree, patch, issue_examples(CLAMP_ISSUE), limit_per_mutator=10):
        if kind_filter is None or cf.mutator == kind_filter:
            out.setdefault(cf.mutator, []).append(
                apply_patch({"pkg/m.py": CLAMP_BUGGY}, cf.patch)["pkg/m.py"]
            )
    return out


def _clamp(source: str, *args: int) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace["clamp"](*args)


def test_each_wrong_mutator_fires_on_a_typical_fix() -> None:
    mutants = _mutants()
    assert {
        "invert_condition",
        "weaken_condition",
        "off_by_one",
        "return_early",
        "drop_statement",
        "special_case_issue_example",
    } <= set(mutants)
    assert any("not (x < lo and lo <= hi)" in m for m in mutants["invert_condition"])
    assert any("if x < lo:" in m for m in mutants["weaken_condition"])
    assert any("x <= lo" in m for m in mutants["off_by_one"])


def test_special_case_hard_codes_the_issue_example_and_nothing_else() -> None:
    (mutant,) = _mutants("special_case_issue_example")["special_case_issue_example"]
    assert _clamp(mutant, -5, 0, 10) == 0  # the value the issue states
    assert _clamp(mutant, -6, 0, 10) == -6  # still the bug everywhere else
    assert _clamp(CLAMP_GOLD, -6, 0, 10) == 0


def test_special_case_never_reads_the_withheld_tests() -> None:
    """The tests check clamp(-7, -3, 10); only the issue's clamp(-5, 0, 10) may be hard-coded."""
    (mutant,) = _mutants("special_case_issue_example")["special_case_issue_example"]
    assert "-7" not in mutant
    assert _clamp(mutant, -7, -3, 10) == -7
    tree, _ = _tree(CLAMP_BUGGY, CLAMP_GOLD)
    assert special_case_issue_examples(tree, issue_examples("clamp is wrong for low x")) == []


def test_special_case_raises_the_stated_error() -> None:
    tree, _ = _tree(CLAMP_BUGGY, CLAMP_GOLD)
    issue = "clamp(3, 5, 1) should raise ValueError (an empty interval)."
    (cf,) = special_case_issue_examples(tree, issue_examples(issue))
    mutant = apply_patch({"pkg/m.py": CLAMP_BUGGY}, cf.patch)["pkg/m.py"]
    with pytest.raises(ValueError, match="invalid input"):
        _clamp(mutant, 3, 5, 1)
    assert _clamp(mutant, 3, 5, 2) == 2  # the bug's answer elsewhere


def test_drop_hunk_needs_two_hunks() -> None:
    tree, patch = _tree(CLAMP_BUGGY, CLAMP_GOLD)
    assert not [c for c in wrong_counterfactuals(tree, patch) if c.mutator == "drop_hunk"]
    spaced_buggy = CLAMP_BUGGY + "\n" * 10 + "LIMIT = 1\n"
    spaced_gold = CLAMP_GOLD + "\n" * 10 + "LIMIT = 2\n"
    tree, patch = _tree(spaced_buggy, spaced_gold)
    drops = [c for c in wrong_counterfactuals(tree, patch) if c.mutator == "drop_hunk"]
    assert len(drops) == 2


def test_correct_alternatives_on_a_typical_fix() -> None:
    tree, _ = _tree(CLAMP_BUGGY, CLAMP_GOLD)
    found: dict[str, list[str]] = {}
    for cf in correct_counterfactuals(tree):
        found.setdefault(cf.mutator, []).append(
            apply_patch({"pkg/m.py": CLAMP_BUGGY}, cf.patch)["pkg/m.py"]
        )
    assert any("lo > x" in m for m in found["equivalent_expression"])
    assert any("hi >= lo" in m for m in found["equivalent_expression"])
    for source in (m for group in found.values() for m in group):
        for args in [(-5, 0, 10), (5, 0, 10), (50, 0, 10), (3, 5, 1)]:
            assert _clamp(source, *args) == _clamp(CLAMP_GOLD, *args)
