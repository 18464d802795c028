"""Pipeline 2 on real tasks: counterfactuals scored by the real sandbox grader."""

from __future__ import annotations

from pathlib import Path

from curate_tasks import make_task
from swe_curate._judge import OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict


def test_good_task_is_accepted(tmp_path: Path, scorer: SandboxScorer) -> None:
    rec = judge_task(make_task(tmp_path, "good"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.ACCEPTED, (rec.reason, rec.measurements)
    q2 = rec.measurements["q2"]
    assert q2["wrong"] >= 3
    assert q2["correct"] >= 1
    assert q2["wrong_passing"] == 0
    # The off-by-one `x <= lo` returns lo either way: an equivalent mutant, probed and discounted.
    assert q2["equivalent_suspects"] >= 1
    assert all(e["reward"] == 1 for e in rec.evidence if e["kind"] == "correct")


def test_loose_suite_is_too_loose_with_the_shortcut_as_evidence(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    rec = judge_task(make_task(tmp_path, "loose"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.TOO_LOOSE, rec.reason
    passing = [
        e
        for e in rec.evidence
        if e["kind"] == "wrong" and e["reward"] == 1 and not e.get("equivalent_suspect")
    ]
    assert "special_case_test_values" in {e["mutator"] for e in passing}


def test_implementation_detail_suite_is_over_restrictive(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    rec = judge_task(make_task(tmp_path, "implementation"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.OVER_RESTRICTIVE, rec.reason
    failing = [e for e in rec.evidence if e["kind"] == "correct" and e["reward"] == 0]
    assert failing
    assert all(
        e["tests"]["tests/test_ops.py::test_guard_is_written_as_documented"] == "failed"
        for e in failing
    )
    assert all(
        e["tests"]["tests/test_ops.py::test_clamp_matches_reference"] == "passed" for e in failing
    )
