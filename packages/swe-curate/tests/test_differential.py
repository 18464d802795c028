"""Differential probing: candidate inputs, module names, probe results (host side)."""

from __future__ import annotations

import pytest

from swe_curate._diff import make_patch
from swe_curate._differential import ProbeResult, _perturb, candidate_cases, module_name
from swe_curate._source import PatchedTree

BUGGY = "def clamp(x, lo, hi):\n    if x > hi:\n        return hi\n    return x\n\n\nclass K:\n    def m(self, v):\n        return v\n"
GOLD = BUGGY.replace("    return x\n", "    if x < lo:\n        return lo\n    return x\n").replace(
    "return v", "return v + 1"
)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("pkg/m.py", "pkg.m"),
        ("src/pkg/m.py", "pkg.m"),
        ("pkg/__init__.py", "pkg"),
        ("m.py", "m"),
        ("a-b/m.py", None),
        ("x.txt", None),
    ],
)
def test_module_names(path: str, name: str | None) -> None:
    assert module_name(path) == name


def test_candidates_come_from_the_tests_and_their_perturbations() -> None:
    tree = PatchedTree.from_patch(
        {"pkg/m.py": BUGGY}, make_patch({"pkg/m.py": BUGGY}, {"pkg/m.py": GOLD})
    )
    tests = {
        "tests/t.py": "from pkg.m import clamp\n\ndef test():\n    assert clamp(-5, 0, 10) == 0\n"
    }
    cases = candidate_cases(tree, tests, limit=200, drawn=5)
    assert {c.module for c in cases} == {"pkg.m"}
    assert {c.qualname for c in cases} == {"clamp"}  # methods are skipped
    args = [c.args for c in cases]
    assert args[0] == "(-5, 0, 10)"
    assert "(-6, 0, 10)" in args
    assert "(-5, 0, 11)" in args
    assert len(args) == len(set(args))
    # the seed and its 18 perturbations always; the 5 drawn inputs depend on hypothesis's
    # version (6.100 repeats more of them than today's), so only "some are new" is the contract
    assert len(cases) >= 1 + 18 + 1


def test_without_literal_calls_zero_arguments_are_probed() -> None:
    tree = PatchedTree.from_patch(
        {"pkg/m.py": BUGGY}, make_patch({"pkg/m.py": BUGGY}, {"pkg/m.py": GOLD})
    )
    cases = candidate_cases(tree, {}, drawn=0)
    assert cases[0].args == "(0, 0, 0)"


def test_perturbations_change_one_position_at_a_time() -> None:
    for variant in _perturb((3, "ab", [1, 2], True)):
        differences = sum(a != b for a, b in zip(variant, (3, "ab", [1, 2], True), strict=True))
        assert differences == 1


@pytest.mark.parametrize(
    ("result", "literal"),
    [
        (ProbeResult(True, "3"), True),
        (ProbeResult(True, "'a'"), True),
        (ProbeResult(True, "<object at 0x1>"), False),
        (ProbeResult(True, "nan"), False),
        (ProbeResult(False, "ValueError"), True),
    ],
)
def test_only_literal_outcomes_can_become_assertions(result: ProbeResult, literal: bool) -> None:
    assert result.deterministic_literal is literal
