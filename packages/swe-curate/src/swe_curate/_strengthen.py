"""Test strengthening (Arctic-SWE §4.2): repair a ``too_loose`` suite in place, not drop it.

New checks follow from the issue first: every example the issue states (``f(args)`` should
return ``v`` / raise ``E``) becomes an assertion, provided gold agrees with it. Only when a
surviving wrong patch still passes those are gold-derived checks added on inputs where it
differs from gold (perturbations of the issue's examples and of the test calls); these are
flagged ``derived_from_gold`` for review, since the paper wants checks that follow from the
issue. The repair is accepted only if, graded with the training scorer, gold still gets reward
1 and *every* known wrong patch gets 0. Each new test joins FAIL_TO_PASS or PASS_TO_PASS by its
measured outcome on the buggy tree, so the strengthened row passes its own audit. Issue, gold
patch and buggy tree are untouched; only the test patch grows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from swe_curate._ast_safe import literal_eval, parse_source
from swe_curate._diff import make_patch, touched_paths
from swe_curate._differential import (
    ProbeCase,
    ProbeResult,
    candidate_cases,
    distinguishing,
    module_name,
)
from swe_curate._errors import (
    CurateError,
    CuratePatchApplyError,
    PatchFormatError,
    ScorerError,
    TaskInputError,
)
from swe_curate._importers import task_to_row
from swe_curate._issue import IssueExample, issue_examples
from swe_curate._judging import discounted, task_after_audit
from swe_curate._records import CurationRecord
from swe_curate._scorer import Scorer, TaskTree
from swe_curate._source import PatchedTree, iter_functions
from swe_curate._verdicts import Verdict
from swe_sandbox import TaskSpec, TestOutcome

STAGE = "strengthen"
STRENGTHENED_FILE = "test_swe_curate_strengthened.py"


@attrs.frozen
class StrengthenConfig:
    """``max_new_tests``: cap on added checks (a greedy cover of the wrong patches)."""

    max_new_tests: int = 8
    max_cases: int = 48


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


@attrs.frozen
class Check:
    """One added check: a call, the outcome it must have, and where that outcome comes from
    (``"issue"``: stated in the issue text; ``"gold"``: gold's behaviour)."""

    case: ProbeCase
    outcome: ProbeResult
    origin: str

    def describe(self) -> str:
        """The check in one line: ``f(x) == v`` or ``f(x) raises E``."""
        call = self.case.call_source()
        if self.outcome.ok:
            return f"{call} == {self.outcome.value}"
        return f"{call} raises {self.outcome.value}"

    def body(self) -> list[str]:
        call = self.case.call_source()
        if self.outcome.ok:
            return [f"    assert {call} == {self.outcome.value}"]
        return [f"    with pytest.raises({self.outcome.value}):", f"        {call}"]


def test_name(check: Check, n: int) -> str:
    """``test_issue_example_<n>`` or ``test_gold_behaviour_<n>``."""
    return f"test_issue_example_{n}" if check.origin == "issue" else f"test_gold_behaviour_{n}"


def render_tests(instance_id: str, checks: Sequence[Check]) -> str:
    """A pytest module asserting each check (one test function per check)."""
    imports = sorted({(c.case.module, c.case.qualname.split(".")[0]) for c in checks})
    lines = [
        f'"""Checks added by swe-curate test strengthening for {instance_id}.',
        "",
        "test_issue_example_*: examples stated in the issue text (gold agrees with each).",
        "test_gold_behaviour_*: gold's behaviour where a plausible wrong patch differs; review",
        'these: the issue does not state them."""',
        "",
        "import pytest",
        "",
        *(f"from {module} import {name}" for module, name in imports),
    ]
    for n, check in enumerate(checks):
        lines += ["", "", f"def {test_name(check, n)}():", *check.body()]
    return "\n".join(lines) + "\n"


def strengthen_task(
    task: TaskSpec,
    scorer: Scorer,
    judge_record: CurationRecord,
    audit: CurationRecord | None = None,
    config: StrengthenConfig = StrengthenConfig(),
) -> CurationRecord:
    """Repair one ``too_loose`` task; the record carries the strengthened task row."""
    began = time.monotonic()
    task = task_after_audit(task, audit)
    measurements: dict[str, Any] = {}

    def record(verdict: Verdict, reason: str) -> CurationRecord:
        return CurationRecord(
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
    # Equivalent mutants (no probe tells them from gold) and patches that differ from gold only
    # where the issue says nothing are not wrong patches: no check following from the issue
    # can reject them.
    wrong = [
        e["patch"]
        for e in judge_record.evidence
        if e.get("kind") == "wrong" and e.get("reward") is not None and not discounted(e)
    ]
    surviving = [
        e["patch"]
        for e in judge_record.evidence
        if e.get("kind") == "wrong" and e.get("reward") == 1 and not discounted(e)
    ]
    try:
        return _strengthen(task, scorer, config, wrong, surviving, measurements, record)
    except TaskInputError as exc:
        return record(Verdict.for_input_error(exc), str(exc))
    except ScorerError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc))
    except CurateError as exc:
        return record(Verdict.NOT_STRENGTHENABLE, f"{type(exc).__name__}: {exc}")


def _sources(task: TaskSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Buggy text of the files gold touches, and of the graded test files."""
    view = TaskTree(task)
    gold_sources: dict[str, str] = {}
    for path in _touched(task.gold_patch):
        try:
            gold_sources[path] = view.read_file(path)
        except (FileNotFoundError, ValueError):
            continue
    tests: dict[str, str] = {}
    for test_id in task.graded_tests:
        path = test_id.split("::", 1)[0]
        try:
            tests.setdefault(path, view.read_file(path))
        except (FileNotFoundError, ValueError):
            continue
    return gold_sources, tests


def issue_cases(tree: PatchedTree, issue: str) -> list[tuple[ProbeCase, IssueExample]]:
    """The issue's examples that call a module-level function of a file gold touches."""
    functions: dict[str, str] = {}
    for path, text in tree.gold.items():
        module = module_name(path)
        if module is None:
            continue
        for name, _node in iter_functions(parse_source(text)):
            if "." not in name:
                functions.setdefault(name, module)
    return [
        (ProbeCase(functions[e.function], e.function, e.args), e)
        for e in issue_examples(issue, functions)
    ]


def _agrees(result: ProbeResult, example: IssueExample) -> bool:
    if example.raises is not None:
        return not result.ok and result.value == example.raises
    try:
        return result.ok and literal_eval(result.value) == example.expected()
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _strengthen(
    task: TaskSpec,
    scorer: Scorer,
    config: StrengthenConfig,
    wrong: list[str],
    surviving: list[str],
    measurements: dict[str, Any],
    record: Callable[[Verdict, str], CurationRecord],
) -> CurationRecord:
    gold_sources, tests = _sources(task)
    tree = PatchedTree.from_patch(gold_sources, task.gold_patch)
    stated = issue_cases(tree, task.problem_statement)
    examples = [e for _, e in stated]
    probes = candidate_cases(tree, tests, limit=config.max_cases, examples=examples)
    cases = [c for c, _ in stated] + [c for c in probes if c not in {s for s, _ in stated}]
    measurements.update(
        issue_examples=[e.call_source() for e in examples],
        candidates=len(cases),
        surviving=len(surviving),
        known_wrong=len(wrong),
    )
    if not cases:
        return record(
            Verdict.NOT_STRENGTHENABLE,
            "the issue states no example and no changed module-level function can be probed",
        )
    gold, differing = distinguishing(scorer, task, cases, surviving)
    checks, uncovered = _choose(stated, cases, gold, differing, config, measurements)
    if uncovered:
        return record(
            Verdict.NOT_STRENGTHENABLE,
            f"no check tells {len(uncovered)} surviving wrong patch(es) from gold",
        )
    if not checks:
        return record(Verdict.NOT_STRENGTHENABLE, "no check to add")
    return _verify(task, scorer, wrong, checks, measurements, record)


def _choose(
    stated: Sequence[tuple[ProbeCase, IssueExample]],
    cases: Sequence[ProbeCase],
    gold: Sequence[ProbeResult],
    differing: Sequence[list[int]],
    config: StrengthenConfig,
    measurements: dict[str, Any],
) -> tuple[list[Check], list[int]]:
    """Every issue example gold agrees with, then a greedy cover of what they leave passing."""
    agreed = [i for i, (_, example) in enumerate(stated) if _agrees(gold[i], example)]
    measurements["issue_examples_gold_disagrees"] = [
        stated[i][1].call_source() for i in range(len(stated)) if i not in agreed
    ]
    checks = [Check(cases[i], gold[i], "issue") for i in agreed]
    left = [
        [i for i in found if i >= len(stated) and gold[i].deterministic_literal]
        if not set(found) & set(agreed)
        else []
        for found in differing
    ]
    rejected_by_issue = [bool(set(found) & set(agreed)) for found in differing]
    chosen = _cover(left, config.max_new_tests)
    checks += [Check(cases[i], gold[i], "gold") for i in chosen]
    uncovered = [
        i
        for i, found in enumerate(left)
        if not rejected_by_issue[i] and not set(found) & set(chosen)
    ]
    return checks, uncovered


def _verify(
    task: TaskSpec,
    scorer: Scorer,
    wrong: list[str],
    checks: list[Check],
    measurements: dict[str, Any],
    record: Callable[[Verdict, str], CurationRecord],
) -> CurationRecord:
    """Classify the new tests on the buggy tree, then require gold 1 and every wrong patch 0."""
    test_dir = (
        task.fail_to_pass[0].split("::", 1)[0].rpartition("/")[0] if task.fail_to_pass else "tests"
    )
    test_path = f"{test_dir}/{STRENGTHENED_FILE}" if test_dir else STRENGTHENED_FILE
    source = render_tests(task.instance_id, checks)
    new_ids = [f"{test_path}::{test_name(c, n)}" for n, c in enumerate(checks)]
    test_patch = task.test_patch
    if test_patch and not test_patch.endswith("\n"):
        test_patch += "\n"
    probe = attrs.evolve(
        task,
        test_patch=test_patch + make_patch({}, {test_path: source}),
        graded_files=(*task.graded_files, test_path),
        fail_to_pass=(*task.fail_to_pass, *new_ids),
    )
    on_buggy = scorer.grade(probe, "").tests
    passing = [t for t in new_ids if on_buggy.get(t) is TestOutcome.PASSED]
    strengthened = attrs.evolve(
        probe,
        fail_to_pass=(*task.fail_to_pass, *(t for t in new_ids if t not in passing)),
        pass_to_pass=(*task.pass_to_pass, *passing),
    )
    measurements.update(
        added_tests=[
            {
                "test": test_id,
                "origin": check.origin,
                "check": check.describe(),
                "list": "PASS_TO_PASS" if test_id in passing else "FAIL_TO_PASS",
            }
            for test_id, check in zip(new_ids, checks, strict=True)
        ],
        test_source=source,
        derived_from_gold=any(c.origin == "gold" for c in checks),
    )
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
        except CuratePatchApplyError:
            rewards.append(0)
    measurements["wrong_rewards"] = rewards
    if any(rewards):
        return record(Verdict.NOT_STRENGTHENABLE, f"{sum(rewards)} wrong patch(es) still pass")
    measurements["task"] = task_to_row(strengthened)
    issue_made = sum(c.origin == "issue" for c in checks)
    return record(
        Verdict.STRENGTHENED,
        f"{len(checks)} test(s) added ({issue_made} from the issue's examples, "
        f"{len(checks) - issue_made} from gold's behaviour; {len(passing)} pass on the buggy "
        f"tree: PASS_TO_PASS); gold passes, {len(wrong)} wrong patch(es) fail",
    )


def _touched(patch: str) -> list[str]:
    try:
        return touched_paths(patch)
    except PatchFormatError:
        return []
