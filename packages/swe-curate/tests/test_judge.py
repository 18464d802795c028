"""The offline judge's questions 1 and 3 (question 2 is covered by the mutator tests)."""

from __future__ import annotations

from swe_curate._diff import make_patch
from swe_curate._judge import JudgeContext, OfflineJudge

BUGGY = "def clamp(x, lo, hi):\n    if x > hi:\n        return hi\n    return x\n"
GOLD = BUGGY.replace("    return x\n", "    if x < lo:\n        return lo\n    return x\n")
TEST = "from pkg.m import clamp\n\ndef test_low():\n    assert clamp(-5, 0, 10) == 0\n"


def _ctx(issue: str, measurements: dict[str, object] | None = None) -> JudgeContext:
    files = {"pkg/m.py": BUGGY, "tests/test_m.py": TEST}

    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    return JudgeContext(
        instance_id="t",
        problem_statement=issue,
        gold_patch=make_patch({"pkg/m.py": BUGGY}, {"pkg/m.py": GOLD}),
        test_patch="",
        fail_to_pass=("tests/test_m.py::test_low",),
        pass_to_pass=(),
        read_file=read,
        list_files=lambda: sorted(files),
        measurements=measurements or {},
    )


def test_issue_naming_the_tested_symbol_holds() -> None:
    finding = OfflineJudge().issue_states_tests(_ctx("clamp() ignores lo"), "")
    assert finding.holds
    assert finding.rewritten_issue is None


def test_vague_issue_is_rewritten_with_the_binding_assertion() -> None:
    binding = {"binding_assertions": [{"source": "assert clamp(-5, 0, 10) == 0"}]}
    finding = OfflineJudge().issue_states_tests(_ctx("Numbers are wrong sometimes.", binding), "")
    assert not finding.holds
    assert finding.rewritten_issue is not None
    assert finding.rewritten_issue.startswith("Numbers are wrong sometimes.")
    assert "`assert clamp(-5, 0, 10) == 0`" in finding.rewritten_issue
    assert "x < lo" not in finding.rewritten_issue  # never leaks the fix


def test_question_one_follows_execution_evidence() -> None:
    assert OfflineJudge().gold_fixes_issue(_ctx("x")).holds
    assert not OfflineJudge().gold_fixes_issue(_ctx("x", {"gold_fixes_f2p": False})).holds


def test_usage_counts_probes() -> None:
    judge = OfflineJudge()
    found = judge.counterfactuals(_ctx("clamp"))
    assert judge.usage()["probes"] == len(found) > 0
