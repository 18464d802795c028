"""Held-out-style cases end to end (``curate_cases``): each verdict is proved by grading
hand-written wrong and correct patches with the sandbox grader, not only by reading it.

Before this judge, the offline judge got three of these six wrong: ``good_literal`` was
``too_loose`` (a mutator hard-coded the withheld tests' literals), ``exact_message`` and
``private_helper`` were ``accepted``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import pytest
from curate_cases import CASES, EXPECTED, HAND_CORRECT, HAND_WRONG, make_task, patch_to

from swe_curate._audit import AuditConfig, audit_task
from swe_curate._importers import task_from_native_row
from swe_curate._judge import OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._records import CurationRecord
from swe_curate._scorer import SandboxScorer
from swe_curate._strengthen import strengthen_task
from swe_curate._verdicts import Verdict
from swe_sandbox import DockerBackend, NamespaceBackend, TaskSpec, TestOutcome

AUDIT = AuditConfig(reruns=1, binding=False)
REQUIREMENT = {
    "exact_message": "exact message f'not a duration: {text!r}' not stated in the issue",
    "private_helper": "imports private helper `_unit_seconds` not named in the issue",
}


class Curated(NamedTuple):
    task: TaskSpec
    audit: CurationRecord
    judged: CurationRecord
    strengthened: CurationRecord | None


@pytest.fixture(scope="module")
def module_scorer(namespace_backend: NamespaceBackend) -> Iterator[SandboxScorer]:
    with SandboxScorer(namespace_backend) as live:
        yield live


@pytest.fixture(scope="module")
def curated(
    module_scorer: SandboxScorer, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], Curated]:
    """Each case audited, judged and (when too_loose) strengthened once per module."""
    done: dict[str, Curated] = {}

    def get(case: str) -> Curated:
        if case not in done:
            task = make_task(tmp_path_factory.mktemp(case), case)
            audit = audit_task(task, module_scorer, AUDIT)
            judged = judge_task(task, module_scorer, OfflineJudge(), audit)
            repaired = None
            if judged.verdict is Verdict.TOO_LOOSE:
                repaired = strengthen_task(task, module_scorer, judged, audit)
            done[case] = Curated(task, audit, judged, repaired)
        return done[case]

    return get


def _rewards(scorer: SandboxScorer, task: TaskSpec, patches: dict[str, str]) -> dict[str, int]:
    return {name: scorer.grade(task, patch_to(source)).reward for name, source in patches.items()}


@pytest.mark.parametrize("case", CASES)
def test_case_verdict_holds_under_hand_written_patches(
    case: str, curated: Callable[[str], Curated], module_scorer: SandboxScorer
) -> None:
    task, audit, judged, _ = curated(case)
    scorer = module_scorer
    assert audit.verdict is Verdict.ADMITTED, audit.reason
    assert judged.verdict.value == EXPECTED[case], (judged.reason, judged.measurements["q2"])
    wrong = _rewards(scorer, task, HAND_WRONG[case])
    correct = _rewards(scorer, task, HAND_CORRECT[case])
    if EXPECTED[case] == "accepted":
        assert set(wrong.values()) == {0}, wrong
        assert set(correct.values()) == {1}, correct
    elif EXPECTED[case] == "over_restrictive":
        assert set(correct.values()) == {0}, correct  # a real fix loses its reward
        assert REQUIREMENT[case] in judged.reason
    else:  # too_loose
        assert 1 in wrong.values(), wrong  # a shortcut really earns reward 1
        assert set(correct.values()) == {1}, correct
    if case == "private_helper":
        # Gold also rewrote format_duration, which the issue never names: wrong patches that
        # only differ there pass the suite but are off-issue, not evidence of a loose suite.
        off = [e for e in judged.evidence if e.get("off_issue")]
        assert any("format_duration" in e["off_issue"] for e in off), off
        assert all(e["reward"] == 1 for e in off)
    # No counterfactual may carry a literal only the withheld tests hold (7200, 3661, 10800).
    for entry in judged.evidence:
        if entry["kind"] == "wrong":
            added = [ln for ln in entry["patch"].splitlines() if ln.startswith("+")]
            assert not any(v in ln for ln in added for v in ("7200", "3661")), entry["mutator"]


@pytest.mark.parametrize("case", ["loose_isinstance", "edge_unchecked"])
def test_too_loose_case_is_repaired_from_the_issue(
    case: str, curated: Callable[[str], Curated], module_scorer: SandboxScorer
) -> None:
    task, _, judged, rec = curated(case)
    scorer = module_scorer
    assert judged.verdict is Verdict.TOO_LOOSE
    assert rec is not None
    assert rec.verdict is Verdict.STRENGTHENED, (rec.reason, rec.measurements)
    added = rec.measurements["added_tests"]
    issue_checks = [a["check"] for a in added if a["origin"] == "issue"]
    assert "parse_duration('1h30m') == 5400" in issue_checks  # the stated value, asserted
    assert "parse_duration('') raises ValueError" in issue_checks
    repaired = task_from_native_row(rec.measurements["task"])
    assert repaired.problem_statement == task.problem_statement
    assert repaired.gold_patch == task.gold_patch
    # Each new test sits in the list its buggy-tree outcome says.
    on_buggy = scorer.grade(repaired, "").tests
    for entry in added:
        passed = on_buggy[entry["test"]] is TestOutcome.PASSED
        assert entry["list"] == ("PASS_TO_PASS" if passed else "FAIL_TO_PASS"), entry
        assert (entry["test"] in repaired.pass_to_pass) is passed
    # The strengthened row passes its own audit; shortcuts now fail, real fixes still pass.
    assert audit_task(repaired, scorer, AUDIT).verdict is Verdict.ADMITTED
    assert scorer.grade(repaired, task.gold_patch).reward == 1
    assert set(_rewards(scorer, repaired, HAND_WRONG[case]).values()) == {0}
    assert set(_rewards(scorer, repaired, HAND_CORRECT[case]).values()) == {1}


def test_loose_case_classifies_the_already_working_example_as_pass_to_pass(
    curated: Callable[[str], Curated],
) -> None:
    """parse_duration('2m') == 120 is stated and already true on the buggy tree."""
    rec = curated("loose_isinstance").strengthened
    assert rec is not None
    (entry,) = [
        a for a in rec.measurements["added_tests"] if a["check"].startswith("parse_duration('2m')")
    ]
    assert entry["list"] == "PASS_TO_PASS"
    assert rec.measurements["derived_from_gold"] is True  # the 4-example special case needs one
    assert rec.measurements["issue_examples_gold_disagrees"] == []


@pytest.mark.slow  # heavy (CI time); nox -s nightly runs it
@pytest.mark.docker
def test_docker_grades_the_loose_case_the_same(curated: Callable[[str], Curated]) -> None:
    """The repaired loose suite, graded on the Docker backend: the stated-value shortcut earns
    1 before the repair and 0 after; the regex alternative earns 1 on both."""
    task, _, _, rec = curated("loose_isinstance")
    assert rec is not None
    repaired = task_from_native_row(rec.measurements["task"])
    docker = DockerBackend()  # the root conftest skips (or, in CI, fails) without an engine
    shortcut = {"hours_count_zero": HAND_WRONG["loose_isinstance"]["hours_count_zero"]}
    with SandboxScorer(docker) as on_docker:
        assert _rewards(on_docker, task, shortcut) == {"hours_count_zero": 1}
        assert _rewards(on_docker, repaired, shortcut) == {"hours_count_zero": 0}
        alternative = HAND_CORRECT["loose_isinstance"]
        assert set(_rewards(on_docker, repaired, alternative).values()) == {1}
