"""Pipeline 2 (Arctic-SWE §4): the judge's three questions in dependency order, settled by scoring
counterfactual patches with the training scorer.

1. Does the gold patch fix the issue? No → ``gold_does_not_fix``.
2. Do the tests grade what the issue asks? Every counterfactual is graded exactly as a training
   submission: a wrong patch with reward 1 → ``too_loose``; a correct alternative with reward 0
   → ``over_restrictive``, naming the requirement it tripped. A passing wrong patch counts only
   if a differential probe shows it wrong on what the issue covers (the functions it names, on
   its examples and their perturbations): one that behaves like gold there is an equivalent
   mutant or merely differs from gold elsewhere; it is kept as evidence, not counted.
3. Only when (1) and (2) hold: does the issue state what the tests demand? No → the judge's
   rewritten issue is recorded (``issue_rewritten``), the only edit a judge may make.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._diff import apply_patch
from swe_curate._differential import candidate_cases, distinguishing
from swe_curate._errors import (
    CurateError,
    CuratePatchApplyError,
    JudgeError,
    JudgeGarbageError,
    JudgeTimeoutError,
    MutationError,
    PatchFormatError,
    ScorerError,
    TaskInputError,
)
from swe_curate._issue import issue_examples, named_functions
from swe_curate._judge import Judge, JudgeContext
from swe_curate._records import CurationRecord
from swe_curate._scorer import Scorer, TaskTree
from swe_curate._source import PatchedTree, iter_functions
from swe_curate._verdicts import Verdict
from swe_sandbox import TaskSpec

STAGE = "judge"


@attrs.frozen
class JudgeConfig:
    """Pipeline 2 knobs: whether to filter equivalent mutants by differential probing."""

    filter_equivalent: bool = True
    max_counterfactuals: int = 40


def task_after_audit(task: TaskSpec, audit: CurationRecord | None) -> TaskSpec:
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
        graded_files=task.graded_files,
    )


def _score(scorer: Scorer, task: TaskSpec, cfs: Sequence[Counterfactual]) -> list[dict[str, Any]]:
    scored: list[dict[str, Any]] = []
    for cf in cfs:
        entry = cf.to_json()
        try:
            grade = scorer.grade(task, cf.patch)
        except CuratePatchApplyError as exc:
            entry.update(reward=None, error=f"does not apply: {exc}")
        else:
            entry.update(
                reward=grade.reward,
                tests={k: v.value for k, v in grade.tests.items()},
                reasons=list(grade.reasons),
            )
        scored.append(entry)
    return scored


def _triage(
    scorer: Scorer, task: TaskSpec, ctx: JudgeContext, suspects: list[dict[str, Any]]
) -> None:
    """Mark passing wrong patches that are not shown wrong *with respect to the issue*.

    Each is probed against gold on the functions the issue names (all changed functions when
    it names none), with the issue's examples and their perturbations as inputs. A patch that
    behaves like gold there proves nothing about the suite: ``off_issue`` when it only changes
    functions the issue does not name (it merely differs from gold elsewhere),
    ``equivalent_suspect`` otherwise.
    """
    try:
        tree = PatchedTree.from_patch(ctx.gold_sources(), task.gold_patch)
        targets = _probe_targets(tree, ctx.problem_statement)
        cases = candidate_cases(
            tree, ctx.test_sources(), examples=issue_examples(ctx.problem_statement), only=targets
        )
    except (CuratePatchApplyError, PatchFormatError, MutationError):
        return
    if not cases:
        return  # nothing probeable (methods only): count every passing wrong patch
    _, differing = distinguishing(scorer, task, cases, [s["patch"] for s in suspects])
    for suspect, found in zip(suspects, differing, strict=True):
        if found:
            suspect["differs_on"] = cases[found[0]].call_source()
            continue
        changed = _changed_functions(tree, suspect["patch"])
        if changed and not changed & targets:
            suspect["off_issue"] = sorted(changed)
        else:
            suspect["equivalent_suspect"] = True


def _probe_targets(tree: PatchedTree, issue: str) -> set[str]:
    """Module-level changed functions the issue names, or all of them when it names none."""
    module_level = {f.qualname for f in tree.changed_functions() if "." not in f.qualname}
    return named_functions(issue, module_level) or module_level


def _changed_functions(tree: PatchedTree, patch: str) -> set[str]:
    """Qualnames of functions whose code ``patch`` makes differ from gold."""
    try:
        files = apply_patch(tree.buggy, patch)
    except (CuratePatchApplyError, PatchFormatError):
        return set()
    changed: set[str] = set()
    for path, gold_text in tree.gold.items():
        if not path.endswith(".py") or path not in files:
            continue
        try:
            mine = dict(iter_functions(parse_source(files[path])))
        except SyntaxError:
            continue
        for name, node in iter_functions(parse_source(gold_text)):
            other = mine.get(name)
            if other is None or ast.dump(other) != ast.dump(node):
                changed.add(name)
    return changed


def discounted(entry: Mapping[str, Any]) -> bool:
    """A wrong counterfactual that proves nothing: equivalent to gold, or wrong only off-issue."""
    return bool(entry.get("equivalent_suspect") or entry.get("off_issue"))


def _over_restrictive_reason(failing: Sequence[Mapping[str, Any]]) -> str:
    """Name the requirement each failing correct alternative tripped, and the tests that did."""
    parts = []
    for entry in failing:
        tests = sorted(t for t, o in (entry.get("tests") or {}).items() if o != "passed")
        demand = entry.get("requirement") or "an unstated requirement"
        parts.append(f"{entry['mutator']}: the suite demands {demand} (fails {tests})")
    unique = list(dict.fromkeys(parts))
    return f"{len(failing)} correct alternative(s) get reward 0: " + "; ".join(unique)


def judge_task(
    task: TaskSpec,
    scorer: Scorer,
    judge: Judge,
    audit: CurationRecord | None = None,
    config: JudgeConfig = JudgeConfig(),
) -> CurationRecord:
    """Run Pipeline 2 on one task; judge and sandbox failures become recorded verdicts."""
    began = time.monotonic()
    task = task_after_audit(task, audit)
    measurements: dict[str, Any] = {"judge": judge.name}
    evidence: list[dict[str, Any]] = []

    def record(verdict: Verdict, reason: str, rewrite: str | None = None) -> CurationRecord:
        measurements["judge_usage"] = judge.usage()
        return CurationRecord(
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
    except TaskInputError as exc:
        return record(Verdict.for_input_error(exc), str(exc))
    except ScorerError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc))
    except CurateError as exc:
        return record(Verdict.JUDGE_ERROR, f"{type(exc).__name__}: {exc}")


def _questions(
    task: TaskSpec,
    scorer: Scorer,
    judge: Judge,
    audit: CurationRecord | None,
    config: JudgeConfig,
    measurements: dict[str, Any],
    evidence: list[dict[str, Any]],
    record: Callable[..., CurationRecord],
) -> CurationRecord:
    ctx = judge_context(task, audit.measurements if audit else {})
    q1 = judge.gold_fixes_issue(ctx)
    measurements["q1"] = {"holds": q1.holds, "rationale": q1.rationale}
    if not q1.holds:
        return record(Verdict.GOLD_DOES_NOT_FIX, q1.rationale)
    cfs = judge.counterfactuals(ctx)[: config.max_counterfactuals]
    scored = _score(scorer, task, cfs)
    evidence.extend(scored)
    wrong_passing = [s for s in scored if s["kind"] == Kind.WRONG.value and s.get("reward") == 1]
    if config.filter_equivalent and wrong_passing:
        _triage(scorer, task, ctx, wrong_passing)
    wrong_passing = [s for s in wrong_passing if not discounted(s)]
    correct_failing = [
        s for s in scored if s["kind"] == Kind.CORRECT.value and s.get("reward") == 0
    ]
    measurements["q2"] = {
        "wrong": sum(s["kind"] == Kind.WRONG.value for s in scored),
        "correct": sum(s["kind"] == Kind.CORRECT.value for s in scored),
        "wrong_passing": len(wrong_passing),
        "correct_failing": len(correct_failing),
        "equivalent_suspects": sum(bool(s.get("equivalent_suspect")) for s in scored),
        "off_issue": sum(bool(s.get("off_issue")) for s in scored),
        "not_applying": sum(s.get("reward") is None for s in scored),
    }
    if wrong_passing:
        names = sorted({s["mutator"] for s in wrong_passing})
        return record(
            Verdict.TOO_LOOSE, f"{len(wrong_passing)} wrong patch(es) get reward 1: {names}"
        )
    if correct_failing:
        return record(Verdict.OVER_RESTRICTIVE, _over_restrictive_reason(correct_failing))
    summary = f"{measurements['q2']['wrong']} wrong patches all rejected, {measurements['q2']['correct']} correct alternatives all accepted"
    q3 = judge.issue_states_tests(ctx, summary)
    measurements["q3"] = {"holds": q3.holds, "rationale": q3.rationale}
    if q3.holds:
        return record(Verdict.ACCEPTED, summary)
    if not q3.rewritten_issue:
        raise JudgeGarbageError("question 3 failed but the judge gave no rewritten issue")
    return record(Verdict.ISSUE_REWRITTEN, q3.rationale, q3.rewritten_issue)
