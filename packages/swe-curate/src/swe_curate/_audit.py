"""Pipeline 1 (Arctic-SWE §4, execution only): buggy and gold runs, F2P/P2P, reruns, binding asserts.

For each task: grade the buggy tree and the gold tree ``reruns`` times each with the training
scorer; a graded test whose outcome changes across reruns of the same tree is flaky. The
declared FAIL_TO_PASS tests must fail on buggy and pass on gold; PASS_TO_PASS must pass on gold
(and on buggy — except that a P2P test failing on buggy but passing on gold is really an F2P
test, which is how R2E-Gym rows arrive, and is reclassified rather than rejected). Finally the
assertion recorder runs once per tree to find the *binding* assertions: those that raise on the
buggy tree. Every measurement goes into the task's record.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from swe_curate._errors import CurateError, CuratePatchApplyError, ScorerError, TaskInputError
from swe_curate._probe import (
    ASSERT_PLUGIN,
    ASSERT_PLUGIN_SOURCE,
    assertion_command,
    parse_probe_output,
    with_file,
)
from swe_curate._records import CurationRecord
from swe_curate._scorer import Scorer
from swe_curate._verdicts import Verdict
from swe_sandbox import GradeResult, TaskSpec, TestOutcome

STAGE = "audit"


@attrs.frozen
class AuditConfig:
    """Pipeline 1 knobs. ``reruns``: runs per tree (the paper's RFT+DAPO recipe used 50)."""

    reruns: int = 5
    binding: bool = True
    probe_timeout_s: float = 600.0

    def __attrs_post_init__(self) -> None:
        if self.reruns < 1:
            raise ValueError(f"reruns must be >= 1, got {self.reruns}")


def _outcomes(runs: Sequence[GradeResult]) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for run in runs:
        for test, outcome in run.tests.items():
            table.setdefault(test, []).append(outcome.value)
    return table


def _flaky(table: Mapping[str, list[str]]) -> list[str]:
    return sorted(test for test, seen in table.items() if len(set(seen)) > 1)


def _always(table: Mapping[str, list[str]], test: str, outcome: TestOutcome) -> bool:
    seen = table.get(test) or [TestOutcome.MISSING.value]
    return all(value == outcome.value for value in seen)


def audit_task(
    task: TaskSpec, scorer: Scorer, config: AuditConfig = AuditConfig()
) -> CurationRecord:
    """Run Pipeline 1 on one task; never raises for task-level problems (they become verdicts)."""
    began = time.monotonic()

    def record(verdict: Verdict, reason: str, measurements: dict[str, Any]) -> CurationRecord:
        return CurationRecord(
            task.instance_id,
            STAGE,
            verdict,
            reason,
            measurements,
            elapsed_s=time.monotonic() - began,
        )

    if not task.gold_patch.strip():
        return record(Verdict.MALFORMED_ROW, "the task has no gold patch", {})
    if not task.graded_tests:
        return record(Verdict.MALFORMED_ROW, "the task grades no tests", {})
    try:
        buggy = [scorer.grade(task, "") for _ in range(config.reruns)]
        gold = [scorer.grade(task, task.gold_patch) for _ in range(config.reruns)]
    except CuratePatchApplyError as exc:
        return record(Verdict.PATCH_DOES_NOT_APPLY, f"gold patch: {exc}", {})
    except TaskInputError as exc:
        return record(Verdict.for_input_error(exc), str(exc), {})
    except CurateError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc), {})
    return record(*_judge_runs(task, scorer, config, buggy, gold))


def _judge_runs(
    task: TaskSpec,
    scorer: Scorer,
    config: AuditConfig,
    buggy: Sequence[GradeResult],
    gold: Sequence[GradeResult],
) -> tuple[Verdict, str, dict[str, Any]]:
    on_buggy, on_gold = _outcomes(buggy), _outcomes(gold)
    fail = TestOutcome.PASSED
    measured_f2p = sorted(
        t
        for t in task.graded_tests
        if not any(v == fail.value for v in on_buggy.get(t, [])) and _always(on_gold, t, fail)
    )
    measured_p2p = sorted(
        t for t in task.graded_tests if _always(on_buggy, t, fail) and _always(on_gold, t, fail)
    )
    measurements: dict[str, Any] = {
        "reruns": config.reruns,
        "buggy": on_buggy,
        "gold": on_gold,
        "buggy_reward": [r.reward for r in buggy],
        "gold_reward": [r.reward for r in gold],
        "gold_fixes_f2p": all(_always(on_gold, t, fail) for t in task.fail_to_pass),
        "fail_to_pass": measured_f2p,
        "pass_to_pass": measured_p2p,
        "grade_seconds": [round(r.duration_s, 3) for r in (*buggy, *gold)],
    }
    flaky = sorted(set(_flaky(on_buggy)) | set(_flaky(on_gold)))
    if flaky:
        measurements["flaky"] = flaky
        return (Verdict.FLAKY, f"outcome changed across reruns: {flaky}", measurements)
    passing_on_buggy = [t for t in task.fail_to_pass if _always(on_buggy, t, fail)]
    if passing_on_buggy or not measured_f2p:
        why = (
            f"pass on the buggy tree: {passing_on_buggy}"
            if passing_on_buggy
            else "no test fails on buggy and passes on gold"
        )
        return (Verdict.NO_FAIL_TO_PASS, why, measurements)
    gold_failing = [t for t in task.fail_to_pass if not _always(on_gold, t, fail)]
    if gold_failing:
        return (Verdict.GOLD_FAILS, f"fail on the gold tree: {gold_failing}", measurements)
    p2p_broken = [t for t in task.pass_to_pass if not _always(on_gold, t, fail)]
    if p2p_broken:
        return (Verdict.PASS_TO_PASS_BROKEN, f"fail on the gold tree: {p2p_broken}", measurements)
    reclassified = sorted(set(task.pass_to_pass) & set(measured_f2p))
    if reclassified:
        measurements["reclassified_as_f2p"] = reclassified
    if config.binding:
        try:
            measurements["binding_assertions"] = binding_assertions(
                task, scorer, measured_f2p, config
            )
        except (ScorerError, CuratePatchApplyError) as exc:
            measurements["binding_error"] = str(exc)
    return (Verdict.ADMITTED, f"{len(measured_f2p)} F2P, {len(measured_p2p)} P2P", measurements)


def binding_assertions(
    task: TaskSpec, scorer: Scorer, f2p: Sequence[str], config: AuditConfig
) -> list[dict[str, Any]]:
    """Assertions of F2P tests that raise on the buggy tree, with what they do on gold."""
    command = assertion_command(task.test_command, f2p)

    def events(patch: str) -> list[dict[str, Any]]:
        probe_patch = with_file(patch, f"{ASSERT_PLUGIN}.py", ASSERT_PLUGIN_SOURCE)
        done = scorer.run(task, probe_patch, command, timeout=config.probe_timeout_s)
        found = parse_probe_output(done.output, truncated=done.truncated)
        if not isinstance(found, list):
            raise ScorerError("assertion recorder wrote no list")
        return [e for e in found if isinstance(e, dict) and e.get("test") in f2p]

    raised = [e for e in events("") if e.get("outcome") == "raised"]
    gold_events = events(task.gold_patch)
    passed_on_gold = {(e["test"], e["line"]) for e in gold_events if e.get("outcome") == "passed"}
    raised_on_gold = {(e["test"], e["line"]) for e in gold_events if e.get("outcome") == "raised"}
    out: list[dict[str, Any]] = []
    for event in raised:
        key = (event["test"], event["line"])
        gold_state = (
            "passed"
            if key in passed_on_gold
            else "raised"
            if key in raised_on_gold
            else "not reached"
        )
        out.append(
            {
                "test": event["test"],
                "line": event["line"],
                "source": event.get("source", ""),
                "buggy": f"{event.get('exception')}: {event.get('message', '')}",
                "gold": gold_state,
                "is_assertion": event.get("exception") == "AssertionError",
            }
        )
    return out
