"""Test strengthening (paper §4.2): repair a ``too_loose`` suite in place instead of dropping it.

The surviving wrong patches of Pipeline 2 are probed against gold on candidate inputs (existing
test calls, their perturbations, hypothesis-drawn values); on inputs where they differ, new
tests assert the gold behaviour. The repair is accepted only if, graded with the training
scorer, gold still gets reward 1 (so every F2P and P2P test passes) and *every* known wrong
patch now gets 0. Issue, gold patch and buggy tree are untouched; only the test patch grows.

The new checks are derived from gold's behaviour, which the paper does not allow on its own
(new checks must follow from the issue or public behaviour): each record is flagged
``derived_from_gold`` and the added test source is kept for a reviewer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from swe_curate._diff import make_patch, touched_paths
from swe_curate._differential import ProbeCase, ProbeResult, candidate_cases, distinguishing
from swe_curate._errors import CurateError, PatchApplyError, PatchFormatError, ScorerError
from swe_curate._importers import task_to_row
from swe_curate._judging import task_after_audit
from swe_curate._records import TaskRecord
from swe_curate._scorer import Scorer, TaskTree
from swe_curate._source import PatchedTree
from swe_curate._verdicts import Verdict
from swe_sandbox import TaskSpec

STAGE = "strengthen"


@attrs.frozen
class StrengthenConfig:
    """``max_new_tests``: cap on added checks (a greedy cover of the wrong patches)."""

    max_new_tests: int = 8
    max_cases: int = 48


def _safe(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def _cover(differing: Sequence[list[int]], limit: int) -> list[int]:
    """Greedy set cover: few cases that together tell every wrong patch from gold."""
    uncovered = {i for i, found in enumerate(differing) if found}
    chosen: list[int] = []
    while uncovered and len(chosen) < limit:
        counts: dict[int, int] = {}
        for i in uncovered:
            for case in differing[i]:
                counts[case] = counts.get(case, 0) + 1
        best = min(counts, key=lambda c: (-counts[c], c))
        chosen.append(best)
        uncovered = {i for i in uncovered if best not in differing[i]}
    return sorted(chosen)


def render_tests(instance_id: str, cases: Sequence[ProbeCase], gold: Sequence[ProbeResult]) -> str:
    """A pytest module asserting gold's outcome on each case."""
    imports = sorted({(c.module, c.qualname.split(".")[0]) for c in cases})
    lines = [
        f'"""Checks added by swe-curate test strengthening for {instance_id}.',
        "",
        "Derived from the gold patch's behaviour on inputs where plausible wrong patches differ;",
        'flagged for review: the paper requires new checks to follow from the issue."""',
        "",
        "import pytest",
        "",
        *(f"from {module} import {name}" for module, name in imports),
        "",
    ]
    for n, (case, result) in enumerate(zip(cases, gold, strict=True)):
        call = f"{case.qualname}(*{case.args})"
        lines += ["", f"def test_strengthened_{n}():"]
        if result.ok:
            lines.append(f"    assert {call} == {result.value}")
        else:
            lines += [f"    with pytest.raises({result.value}):", f"        {call}"]
    return "\n".join(lines) + "\n"


def strengthen_task(
    task: TaskSpec,
    scorer: Scorer,
    judge_record: TaskRecord,
    audit: TaskRecord | None = None,
    config: StrengthenConfig = StrengthenConfig(),
) -> TaskRecord:
    """Repair one ``too_loose`` task; the record carries the strengthened task row."""
    began = time.monotonic()
    task = task_after_audit(task, audit)
    measurements: dict[str, Any] = {}

    def record(verdict: Verdict, reason: str) -> TaskRecord:
        return TaskRecord(
            task.instance_id,
            STAGE,
            verdict,
            reason,
            measurements,
            elapsed_s=time.monotonic() - began,
        )

    if judge_record.verdict is not Verdict.TOO_LOOSE:
        return record(
            Verdict.NOT_STRENGTHENABLE,
            f"judge verdict is {judge_record.verdict.value}, not too_loose",
        )
    # Equivalent mutants (no probe tells them from gold) are not wrong patches: no test can
    # reject them without rejecting gold too.
    wrong = [
        e["patch"]
        for e in judge_record.evidence
        if e.get("kind") == "wrong"
        and e.get("reward") is not None
        and not e.get("equivalent_suspect")
    ]
    surviving = [
        e["patch"]
        for e in judge_record.evidence
        if e.get("kind") == "wrong" and e.get("reward") == 1 and not e.get("equivalent_suspect")
    ]
    try:
        return _strengthen(task, scorer, config, wrong, surviving, measurements, record)
    except ScorerError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc))
    except CurateError as exc:
        return record(Verdict.NOT_STRENGTHENABLE, f"{type(exc).__name__}: {exc}")


def _strengthen(
    task: TaskSpec,
    scorer: Scorer,
    config: StrengthenConfig,
    wrong: list[str],
    surviving: list[str],
    measurements: dict[str, Any],
    record: Callable[[Verdict, str], TaskRecord],
) -> TaskRecord:
    tree_view = TaskTree(task)
    gold_sources: dict[str, str] = {}
    for path in _touched(task.gold_patch):
        try:
            gold_sources[path] = tree_view.read_file(path)
        except (FileNotFoundError, ValueError):
            continue
    tests: dict[str, str] = {}
    for test_id in task.graded_tests:
        path = test_id.split("::", 1)[0]
        try:
            tests.setdefault(path, tree_view.read_file(path))
        except (FileNotFoundError, ValueError):
            continue
    cases = candidate_cases(
        PatchedTree.from_patch(gold_sources, task.gold_patch), tests, limit=config.max_cases
    )
    measurements.update(candidates=len(cases), surviving=len(surviving), known_wrong=len(wrong))
    if not cases:
        return record(Verdict.NOT_STRENGTHENABLE, "no module-level changed function to probe")
    gold, differing = distinguishing(scorer, task, cases, surviving)
    chosen = _cover(differing, config.max_new_tests)
    missed = [i for i, found in enumerate(differing) if not found]
    if missed or not chosen:
        return record(
            Verdict.NOT_STRENGTHENABLE,
            f"no input tells {len(missed)} surviving wrong patch(es) from gold",
        )
    chosen = [i for i in chosen if gold[i].deterministic_literal]
    new_cases = [cases[i] for i in chosen]
    test_dir = (
        task.fail_to_pass[0].split("::", 1)[0].rpartition("/")[0] if task.fail_to_pass else "tests"
    )
    test_path = (
        f"{test_dir}/test_swe_curate_strengthened.py"
        if test_dir
        else "test_swe_curate_strengthened.py"
    )
    source = render_tests(task.instance_id, new_cases, [gold[i] for i in chosen])
    new_ids = tuple(f"{test_path}::test_strengthened_{n}" for n in range(len(new_cases)))
    addition = make_patch({}, {test_path: source})
    test_patch = (
        task.test_patch
        if task.test_patch.endswith("\n") or not task.test_patch
        else task.test_patch + "\n"
    )
    strengthened = attrs.evolve(
        task,
        test_patch=test_patch + addition,
        graded_files=(*task.graded_files, test_path),
        fail_to_pass=(*task.fail_to_pass, *new_ids),
    )
    measurements.update(added_tests=list(new_ids), test_source=source, derived_from_gold=True)
    gold_grade = scorer.grade(strengthened, task.gold_patch)
    measurements["gold_reward"] = gold_grade.reward
    if gold_grade.reward != 1:
        return record(
            Verdict.NOT_STRENGTHENABLE,
            f"gold fails the strengthened suite: {list(gold_grade.reasons)[:3]}",
        )
    rewards = []
    for patch in wrong:
        try:
            rewards.append(scorer.grade(strengthened, patch).reward)
        except PatchApplyError:
            rewards.append(0)
    measurements["wrong_rewards"] = rewards
    if any(rewards):
        return record(Verdict.NOT_STRENGTHENABLE, f"{sum(rewards)} wrong patch(es) still pass")
    measurements["task"] = task_to_row(strengthened)
    return record(
        Verdict.STRENGTHENED,
        f"{len(new_ids)} test(s) added; gold passes, {len(wrong)} wrong patch(es) fail",
    )


def _touched(patch: str) -> list[str]:
    try:
        return touched_paths(patch)
    except PatchFormatError:
        return []
