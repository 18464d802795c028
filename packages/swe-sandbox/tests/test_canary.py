"""`_canary`: canaries are inserted invisibly, fail/pass as declared under real pytest, and the
report check tells forgery from an honest buggy run."""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swe_sandbox._canary import Canary, misstated_canaries, plan_canaries
from swe_sandbox._results import TestOutcome

MODULE = """import pytest
from calc import add


def test_small():
    assert add(2, 3) == 5


def test_text():
    assert str(add(1, 1)) == "2"


class TestMore:
    def test_negative(self):
        x = add(-2, -3)
        assert x == -5

    @pytest.mark.parametrize("a", [1, 2])
    def test_param(self, a):
        assert add(a, 0) == a


@pytest.mark.parametrize("a,b,expected", [(1, 2, 3), (2, -2, 0)])
def test_table(a, b, expected):
    assert add(a, b) == expected
"""
GRADED = (
    "t/test_m.py::test_small",
    "t/test_m.py::test_text",
    "t/test_m.py::TestMore::test_negative",
    "t/test_m.py::TestMore::test_param[1]",
    "t/test_m.py::test_table[1-2-3]",
    "t/test_m.py::test_table[2--2-0]",
)


def _functions(text: str) -> dict[str, str]:
    tree = ast.parse(text)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.dump(node)
    return found


def test_the_original_tests_are_untouched_and_canaries_are_new_names() -> None:
    plan = plan_canaries({"t/test_m.py": MODULE.encode()}, GRADED, random.Random(3))
    text = plan.files["t/test_m.py"].decode()
    before, after = _functions(MODULE), _functions(text)
    assert all(after[name] == dump for name, dump in before.items())
    names = [c.nodeid.rsplit("::", 1)[1] for c in plan.canaries]
    assert len(set(names)) == len(names) == len(set(after) - set(before))
    assert {c.must_pass for c in plan.canaries} == {True, False}
    copies = [c for c in plan.canaries if c.source]
    assert len(copies) == 6  # two copies of three of the four tests with an expected literal
    for copy in copies:  # never named as its source plus a suffix
        assert copy.source is not None
        assert not copy.nodeid.rsplit("::", 1)[1].startswith(copy.source.rsplit("::", 1)[1])
    # test_param's argument is input and expected at once: changing it would change both sides
    every = plan_canaries({"t/test_m.py": MODULE.encode()}, GRADED, random.Random(3), sources=9)
    assert not any("test_param" in (c.source or "") for c in every.canaries)
    table = [c for c in every.canaries if c.source == "t/test_m.py::test_table"]
    assert len(table) == 2
    assert all(c.cases for c in table)


def _run(tmp_path: Path, module: str, add: str) -> dict[str, str]:
    """Outcomes of a real pytest run of `module` against ``calc.add`` defined as `add`."""
    (tmp_path / "calc").mkdir(exist_ok=True)
    (tmp_path / "calc" / "__init__.py").write_text(f"def add(a, b):\n    return {add}\n")
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "test_m.py").write_text(module)
    report = tmp_path / "report.json"
    plugin = tmp_path / "record_outcomes.py"
    plugin.write_text(
        "import json\nout = {}\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' or report.outcome != 'passed':\n"
        "        out[report.nodeid] = report.outcome\n"
        f"def pytest_sessionfinish(session):\n    open({str(report)!r}, 'w').write(json.dumps(out))\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "record_outcomes", "-p", "no:cacheprovider",
         "-p", "no:randomly", "t/test_m.py"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
    )  # fmt: skip
    outcomes: dict[str, str] = json.loads(report.read_text())
    return outcomes


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_canaries_behave_as_declared_under_real_pytest(tmp_path_factory, seed: int) -> None:  # type: ignore[no-untyped-def]
    tmp_path = tmp_path_factory.mktemp("canary")
    plan = plan_canaries({"t/test_m.py": MODULE.encode()}, GRADED, random.Random(seed))
    module = plan.files["t/test_m.py"].decode()
    correct = _run(tmp_path, module, "a + b")
    for canary in plan.canaries:  # an honest run of correct code states every canary right
        found = [
            v for k, v in correct.items() if k == canary.nodeid or k.startswith(canary.nodeid + "[")
        ]
        assert found, canary
        assert set(found) == {"passed" if canary.must_pass else "failed"}, canary
    outcomes = {k: TestOutcome(v) for k, v in correct.items()}
    assert misstated_canaries(plan.canaries, outcomes) == []
    # a forger that makes every test pass is caught by the must-fail canaries
    forged = dict.fromkeys(outcomes, TestOutcome.PASSED)
    assert misstated_canaries(plan.canaries, forged)


def test_an_honest_buggy_run_is_not_called_forged(tmp_path: Path) -> None:
    """Off by one — the must-fail copy's changed value may coincide with the bug's output."""
    plan = plan_canaries({"t/test_m.py": MODULE.encode()}, GRADED, random.Random(0))
    buggy = _run(tmp_path, plan.files["t/test_m.py"].decode(), "a + b + 1")
    outcomes = {k: TestOutcome(v) for k, v in buggy.items()}
    assert misstated_canaries(plan.canaries, outcomes) == []


def test_the_report_rule() -> None:
    fail = Canary(nodeid="m::test_a_edge", must_pass=False, source="m::test_a")
    keep = Canary(nodeid="m::test_b_more", must_pass=True)
    plain = Canary(nodeid="m::test_c_case", must_pass=False)
    passed, failed = TestOutcome.PASSED, TestOutcome.FAILED
    honest = {"m::test_a": passed, "m::test_a_edge": failed, "m::test_b": passed,
              "m::test_b_more": passed, "m::test_c_case": failed}  # fmt: skip
    assert misstated_canaries((fail, keep, plain), honest) == []
    assert misstated_canaries((fail,), {**honest, "m::test_a_edge": passed})  # forged pass
    assert (
        misstated_canaries((fail,), {**honest, "m::test_a": failed, "m::test_a_edge": passed}) == []
    )
    assert misstated_canaries((keep,), {**honest, "m::test_b_more": failed})  # suppressed
    assert misstated_canaries((plain,), {**honest, "m::test_c_case": passed})
    missing = {k: v for k, v in honest.items() if k != "m::test_b_more"}
    assert misstated_canaries((keep,), missing) == [
        "canary m::test_b_more is missing from the report"
    ]
    table = Canary(nodeid="m::test_t_x", must_pass=False, source="m::test_t", cases=True)
    cases = {"m::test_t[1-2]": passed, "m::test_t[2-3]": passed,
             "m::test_t_x[1-3]": failed, "m::test_t_x[2-5]": failed}  # fmt: skip
    assert misstated_canaries((table,), cases) == []
    assert misstated_canaries((table,), {**cases, "m::test_t_x[2-5]": passed})  # one case forged
    buggy = {**cases, "m::test_t[2-3]": failed, "m::test_t_x[2-5]": passed}
    assert misstated_canaries((table,), buggy) == []  # the source fails: a coincidence
    assert misstated_canaries((table,), {"m::test_t[1-2]": passed})  # no case of the copy


def test_modules_that_do_not_parse_get_no_canaries() -> None:
    plan = plan_canaries(
        {"t/test_x.py": b"def test_x(:\n"}, ("t/test_x.py::test_x",), random.Random(0)
    )
    assert plan.canaries == ()
    assert plan.files == {}


def test_a_module_with_one_short_test_name_still_gets_copies() -> None:
    """Regression: ``test_sub`` alone gave no name that does not extend it (an endless loop)."""
    module = b"from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
    plan = plan_canaries({"t/test_s.py": module}, ("t/test_s.py::test_sub",), random.Random(0))
    names = [c.nodeid.rsplit("::", 1)[1] for c in plan.canaries]
    assert len(names) == 4
    assert not any(name.startswith("test_sub") for name in names[:2])


UNITTEST_MODULE = """import unittest
from calc import add


class AddTests(unittest.TestCase):
    def test_small(self):
        self.assertEqual(add(2, 3), 5)

    def test_negative(self):
        self.assertEqual(-5, add(-2, -3))
"""
UNITTEST_GRADED = ("t/test_m.py::AddTests::test_small", "t/test_m.py::AddTests::test_negative")


def test_unittest_assert_equal_is_copied_too(tmp_path: Path) -> None:
    plan = plan_canaries(
        {"t/test_m.py": UNITTEST_MODULE.encode()}, UNITTEST_GRADED, random.Random(5)
    )
    copies = [c for c in plan.canaries if c.source]
    assert {c.source for c in copies} == set(UNITTEST_GRADED)
    module = plan.files["t/test_m.py"].decode()
    correct = {k: TestOutcome(v) for k, v in _run(tmp_path, module, "a + b").items()}
    assert misstated_canaries(plan.canaries, correct) == []
    # code under test that neuters assertEqual passes every copy: forged
    neutered = module.replace(
        "import unittest\n", "import unittest\nunittest.TestCase.assertEqual = lambda *a: None\n", 1
    )
    forged = {k: TestOutcome(v) for k, v in _run(tmp_path, neutered, "a - b").items()}
    assert misstated_canaries(plan.canaries, forged)


def _many_tests(count: int) -> str:
    lines = ["from calc import add", ""]
    for n in range(count):
        lines += ["", f"def test_case_{n}():", f"    assert add({n}, 1) == {n + 1}", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def test_fail_to_pass_tests_are_copied_first_and_spacing_gives_nothing_away() -> None:
    module = _many_tests(12)
    graded = tuple(f"t/test_m.py::test_case_{n}" for n in range(12))
    for seed in range(40):
        plan = plan_canaries(
            {"t/test_m.py": module.encode()}, graded, random.Random(seed),
            fail_to_pass=("t/test_m.py::test_case_7",),
        )  # fmt: skip
        assert "t/test_m.py::test_case_7" in {c.source for c in plan.canaries}
        text = plan.files["t/test_m.py"].decode()
        # every top-level def is preceded by exactly the two blank lines the module uses
        chunks = text.split("\ndef ")[1:]
        assert all(chunk.rstrip("\n").count("\n\n\n") == 0 for chunk in chunks)
        assert text.count("\n\n\ndef ") == text.count("\ndef ")
        assert text.endswith("\n")
        assert not text.endswith("\n\n")


def test_the_right_value_has_no_telling_rank_among_its_copies() -> None:
    ranks = [0, 0, 0]
    for seed in range(300):
        plan = plan_canaries(
            {
                "t/test_m.py": b"from calc import add\n\n\ndef test_a():\n    assert add(2, 3) == 5\n"
            },
            ("t/test_m.py::test_a",),
            random.Random(seed),
        )
        text = plan.files["t/test_m.py"].decode()
        values = sorted(int(v) for v in re.findall(r"add\(2, 3\) == (-?\d+)", text))
        assert len(values) == 3
        ranks[values.index(5)] += 1
    assert all(60 <= r <= 140 for r in ranks), ranks  # about 100 each
