"""Pipeline 2 (paper §4): the judge's three questions in dependency order, settled by scoring
counterfactual patches with the training scorer.

1. Does the gold patch fix the issue? No → ``gold_does_not_fix``.
2. Do the tests grade what the issue asks? Every counterfactual is graded exactly as a training
   submission: a wrong patch with reward 1 → ``too_loose``; a correct alternative with reward 0
   → ``over_restrictive``. A mutation-made wrong patch that no differential probe can tell apart
   from gold is an equivalent mutant and proves nothing; it is kept as evidence, not counted.
3. Only when (1) and (2) hold: does the issue state what the tests demand? No → the judge's
   rewritten issue is recorded (``issue_rewritten``), the only edit a judge may make.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._differential import candidate_cases, distinguishing
from swe_curate._errors import (
    CurateError,
    JudgeError,
    JudgeGarbageError,
    JudgeTimeoutError,
    MutationError,
    PatchApplyError,
    PatchFormatError,
    ScorerError,
)
from swe_curate._judge import Judge, JudgeContext
from swe_curate._records import TaskRecord
from swe_curate._scorer import Scorer, TaskTree
from swe_curate._source import PatchedTree
from swe_curate._verdicts import Verdict
from swe_sandbox import TaskSpec

STAGE = "judge"


@attrs.frozen
class JudgeConfig:
    """Pipeline 2 knobs: whether to filter equivalent mutants by differential probing."""

    filter_equivalent: bool = True
    max_counterfactuals: int = 40


def task_after_audit(task: TaskSpec, audit: TaskRecord | None) -> TaskSpec:
    """The task with the F2P/P2P lists Pipeline 1 measured (e.g. R2E-Gym rows, which publish
    only the post-fix pattern)."""
    if audit is None or audit.verdict is not Verdict.ADMITTED:
        return task
    f2p = tuple(audit.measurements.get("fail_to_pass") or task.fail_to_pass)
    p2p = tuple(
        t for t in audit.measurements.get("pass_to_pass") or task.pass_to_pass if t not in f2p
    )
    return attrs.evolve(task, fail_to_pass=f2p, pass_to_pass=p2p)


def judge_context(task: TaskSpec, measurements: Mapping[str, Any]) -> JudgeContext:
    """A judge's view of the task: the buggy tree with the graded tests restored."""
    tree = TaskTree(task)
    return JudgeContext(
        instance_id=task.instance_id,
        problem_statement=task.problem_statement,
        gold_patch=task.gold_patch,
        test_patch=task.test_patch,
        fail_to_pass=task.fail_to_pass,
        pass_to_pass=task.pass_to_pass,
        read_file=tree.read_file,
        list_files=tree.list_files,
        measurements=dict(measurements),
    )


def _score(scorer: Scorer, task: TaskSpec, cfs: Sequence[Counterfactual]) -> list[dict[str, Any]]:
    scored: list[dict[str, Any]] = []
    for cf in cfs:
        entry = cf.to_json()
        try:
            grade = scorer.grade(task, cf.patch)
        except PatchApplyError as exc:
            entry.update(reward=None, error=f"does not apply: {exc}")
        else:
            entry.update(
                reward=grade.reward,
                tests={k: v.value for k, v in grade.tests.items()},
                reasons=list(grade.reasons),
            )
        scored.append(entry)
    return scored


def _equivalent_mutants(
    scorer: Scorer, task: TaskSpec, ctx: JudgeContext, suspects: list[dict[str, Any]]
) -> set[int]:
    """Indices (into ``suspects``) of passing mutation-made wrong patches gold cannot be told from."""
    try:
        tree = PatchedTree.from_patch(ctx.gold_sources(), task.gold_patch)
        cases = candidate_cases(tree, ctx.test_sources())
    except (PatchApplyError, PatchFormatError, MutationError):
        return set()
    if not cases:
        return set()
    _, differing = distinguishing(scorer, task, cases, [s["patch"] for s in suspects])
    return {i for i, found in enumerate(differing) if not found}


def judge_task(
    task: TaskSpec,
    scorer: Scorer,
    judge: Judge,
    audit: TaskRecord | None = None,
    config: JudgeConfig = JudgeConfig(),
) -> TaskRecord:
    """Run Pipeline 2 on one task; judge and sandbox failures become recorded verdicts."""
    began = time.monotonic()
    task = task_after_audit(task, audit)
    measurements: dict[str, Any] = {"judge": judge.name}
    evidence: list[dict[str, Any]] = []

    def record(verdict: Verdict, reason: str, rewrite: str | None = None) -> TaskRecord:
        measurements["judge_usage"] = judge.usage()
        return TaskRecord(
            task.instance_id,
            STAGE,
            verdict,
            reason,
            measurements,
            tuple(evidence),
            rewrite,
            elapsed_s=time.monotonic() - began,
        )

    try:
        return _questions(task, scorer, judge, audit, config, measurements, evidence, record)
    except JudgeTimeoutError as exc:
        return record(Verdict.JUDGE_TIMEOUT, str(exc))
    except JudgeGarbageError as exc:
        return record(Verdict.JUDGE_GARBAGE, str(exc))
    except (JudgeError, MutationError) as exc:
        return record(Verdict.JUDGE_ERROR, str(exc))
    except ScorerError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc))
    except CurateError as exc:
        return record(Verdict.JUDGE_ERROR, f"{type(exc).__name__}: {exc}")


def _questions(
    task: TaskSpec,
    scorer: Scorer,
    judge: Judge,
    audit: TaskRecord | None,
    config: JudgeConfig,
    measurements: dict[str, Any],
    evidence: list[dict[str, Any]],
    record: Callable[..., TaskRecord],
) -> TaskRecord:
    ctx = judge_context(task, audit.measurements if audit else {})
    q1 = judge.gold_fixes_issue(ctx)
    measurements["q1"] = {"holds": q1.holds, "rationale": q1.rationale}
    if not q1.holds:
        return record(Verdict.GOLD_DOES_NOT_FIX, q1.rationale)
    cfs = judge.counterfactuals(ctx)[: config.max_counterfactuals]
    scored = _score(scorer, task, cfs)
    evidence.extend(scored)
    wrong_passing = [s for s in scored if s["kind"] == Kind.WRONG.value and s.get("reward") == 1]
    mutated = [s for s in wrong_passing if s["mutator"] != "llm"]
    if config.filter_equivalent and mutated:
        for i in _equivalent_mutants(scorer, task, ctx, mutated):
            mutated[i]["equivalent_suspect"] = True
    wrong_passing = [s for s in wrong_passing if not s.get("equivalent_suspect")]
    correct_failing = [
        s for s in scored if s["kind"] == Kind.CORRECT.value and s.get("reward") == 0
    ]
    measurements["q2"] = {
        "wrong": sum(s["kind"] == Kind.WRONG.value for s in scored),
        "correct": sum(s["kind"] == Kind.CORRECT.value for s in scored),
        "wrong_passing": len(wrong_passing),
        "correct_failing": len(correct_failing),
        "equivalent_suspects": sum(bool(s.get("equivalent_suspect")) for s in scored),
        "not_applying": sum(s.get("reward") is None for s in scored),
    }
    if wrong_passing:
        names = sorted({s["mutator"] for s in wrong_passing})
        return record(
            Verdict.TOO_LOOSE, f"{len(wrong_passing)} wrong patch(es) get reward 1: {names}"
        )
    if correct_failing:
        names = sorted({s["mutator"] for s in correct_failing})
        return record(
            Verdict.OVER_RESTRICTIVE,
            f"{len(correct_failing)} correct alternative(s) get reward 0: {names}",
        )
    summary = f"{measurements['q2']['wrong']} wrong patches all rejected, {measurements['q2']['correct']} correct alternatives all accepted"
    q3 = judge.issue_states_tests(ctx, summary)
    measurements["q3"] = {"holds": q3.holds, "rationale": q3.rationale}
    if q3.holds:
        return record(Verdict.ACCEPTED, summary)
    if not q3.rewritten_issue:
        raise JudgeGarbageError("question 3 failed but the judge gave no rewritten issue")
    return record(Verdict.ISSUE_REWRITTEN, q3.rationale, q3.rewritten_issue)
