"""Test strengthening on a real too_loose task, verified by re-judging the repaired task."""

from __future__ import annotations

from pathlib import Path

import pytest
from curate_tasks import make_task

from swe_curate._differential import ProbeCase, ProbeResult
from swe_curate._importers import task_from_native_row
from swe_curate._judge import OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._records import CurationRecord
from swe_curate._scorer import SandboxScorer
from swe_curate._strengthen import Check, _cover, render_tests, strengthen_task
from swe_curate._verdicts import Verdict


@pytest.mark.slow  # ~50 s: judge, strengthen, re-judge; the CLI test covers judge → strengthen
def test_loose_suite_is_strengthened_and_then_accepted(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    task = make_task(tmp_path, "loose")
    judged = judge_task(task, scorer, OfflineJudge())
    assert judged.verdict is Verdict.TOO_LOOSE
    rec = strengthen_task(task, scorer, judged)
    assert rec.verdict is Verdict.STRENGTHENED, (rec.reason, rec.measurements)
    m = rec.measurements
    assert m["gold_reward"] == 1
    assert m["wrong_rewards"]
    assert set(m["wrong_rewards"]) == {0}
    assert "def test_issue_example_0():\n    assert clamp(-5, 0, 10) == 0" in m["test_source"]
    repaired = task_from_native_row(m["task"])
    assert set(task.fail_to_pass) < set(repaired.fail_to_pass)
    assert repaired.problem_statement == task.problem_statement
    assert repaired.gold_patch == task.gold_patch
    rejudged = judge_task(repaired, scorer, OfflineJudge())
    assert rejudged.verdict is Verdict.ACCEPTED, rejudged.reason


def test_only_too_loose_tasks_are_strengthened(tmp_path: Path) -> None:
    task = make_task(tmp_path, "good")
    rec = strengthen_task(
        task, scorer=None, judge_record=CurationRecord(task.instance_id, "judge", Verdict.ACCEPTED)
    )  # type: ignore[arg-type]
    assert rec.verdict is Verdict.NOT_STRENGTHENABLE


@pytest.mark.parametrize(
    ("differing", "expected"),
    [([[0, 1], [1], [2]], [1, 2]), ([[], [3]], [3]), ([[5], [5], [5]], [5])],
)
def test_cover_picks_few_cases_that_reject_every_coverable_patch(
    differing: list[list[int]], expected: list[int]
) -> None:
    assert _cover(differing, limit=8) == expected


def test_rendered_tests_assert_values_and_exceptions() -> None:
    checks = [
        Check(ProbeCase("geom.ops", "clamp", "(-6, 0, 10)"), ProbeResult(True, "0"), "issue"),
        Check(
            ProbeCase("geom.ops", "clamp", "(None, 0, 1)"), ProbeResult(False, "TypeError"), "gold"
        ),
    ]
    source = render_tests("t-1", checks)
    compile(source, "<strengthened>", "exec")
    assert "from geom.ops import clamp" in source
    assert "def test_issue_example_0():\n    assert clamp(-6, 0, 10) == 0\n" in source
    assert (
        "def test_gold_behaviour_1():\n    with pytest.raises(TypeError):\n        clamp(None, 0, 1)\n"
        in source
    )
    assert checks[1].describe() == "clamp(None, 0, 1) raises TypeError"
