"""Per-test outcomes, the grade record, and the reward contract (ARCHITECTURE.md §4, step 5)."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs


class TestOutcome(enum.Enum):
    """What happened to one graded test. Only `PASSED` counts as a pass."""

    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # setup/teardown error, or a collection error of its file
    SKIPPED = "skipped"  # skipped or xfailed: never a pass (a conftest calling pytest.skip)
    MISSING = "missing"  # absent from the report: never a pass


@attrs.frozen(kw_only=True)
class ExecResult:
    """One finished command.

    Attributes:
        exit_code: the command's exit status (``-9`` style negatives never appear: a kill is 137).
        output: stdout and stderr interleaved, decoded as UTF-8 (invalid bytes replaced), cut to
            the output limit with a truncation marker.
        timed_out: the wall-time limit killed the command's process group.
        truncated: output was longer than the limit; ``output_bytes`` says how long.
        output_bytes: total bytes the command wrote, including the dropped part.
        duration_s: wall time of the round trip.
    """

    exit_code: int
    output: str
    timed_out: bool = False
    truncated: bool = False
    output_bytes: int = 0
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Exit code 0 and not killed by the timeout."""
        return self.exit_code == 0 and not self.timed_out


@attrs.frozen(kw_only=True)
class GradeResult:
    """The verdict on one submission.

    Attributes:
        reward: 1 only when every FAIL_TO_PASS and PASS_TO_PASS test passed (the reward contract).
        tests: graded test id -> outcome, for every graded test (missing ones included).
        runner_exit_code: the test command's exit status (cross-checked against the report).
        reasons: why the reward is 0 (empty when it is 1), human-readable, stable prefixes.
        report_found: the out-of-reach report existed and parsed.
        duration_s: wall time of restore + test run + collection.
        report: every test id the report recorded -> outcome (graded or not); what curation
            uses to measure FAIL_TO_PASS / PASS_TO_PASS on buggy and gold trees.
        collection_errors: node ids that failed to collect.
        patch: the patch that was graded (the policy-filtered agent diff, as `Sandbox.diff`).
        dropped: ``"<path>: <rule>"`` for each file section the patch policy dropped.
        flags: ``"<token> in <path>"`` for added lines naming test-framework internals or the
            report channel (advisory unless the grading policy scores them 0).
        canaries: the known-answer tests this grade inserted (node id -> must pass); a report
            that misstates one is reward 0, reason ``forged`` (`swe_sandbox._canary`).
    """

    reward: int
    tests: Mapping[str, TestOutcome]
    runner_exit_code: int
    reasons: tuple[str, ...] = ()
    report_found: bool = True
    duration_s: float = 0.0
    report: Mapping[str, TestOutcome] = attrs.field(factory=dict)
    collection_errors: tuple[str, ...] = ()
    patch: str = ""
    dropped: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    canaries: Mapping[str, bool] = attrs.field(factory=dict)

    @property
    def resolved(self) -> bool:
        return self.reward == 1

    @property
    def reason_codes(self) -> tuple[str, ...]:
        """The stable code of each reason (``patch-failed``, ``FAIL_TO_PASS``, ...)."""
        return tuple(dict.fromkeys(r.split(":", 1)[0].split(" ", 1)[0] for r in self.reasons))


def reward_contract(
    outcomes: Mapping[str, TestOutcome],
    fail_to_pass: tuple[str, ...],
    pass_to_pass: tuple[str, ...],
    runner_exit_code: int,
    *,
    report_found: bool,
    collection_error: bool,
) -> tuple[int, tuple[str, ...]]:
    """Apply the reward contract: 1 iff F2P now pass and P2P still pass, with no inconsistency.

    A test absent from `outcomes` counts as MISSING (a failure). A collection error fails the
    whole submission. If the report claims every graded test passed but the runner exited
    non-zero *and* the report lacks a clean finish, the report is not trusted (exit-code
    cross-check): pytest exits 0 only when nothing it ran failed.
    """
    reasons: list[str] = []
    if not report_found:
        reasons.append("no-report: the test run wrote no trusted report")
    if collection_error:
        reasons.append("collection-error: a graded file failed to collect")
    for group, names in (("FAIL_TO_PASS", fail_to_pass), ("PASS_TO_PASS", pass_to_pass)):
        for name in names:
            outcome = outcomes.get(name, TestOutcome.MISSING)
            if outcome is not TestOutcome.PASSED:
                reasons.append(f"{group} {name}: {outcome.value}")
    all_graded_passed = not reasons
    # Exit-code cross-check: a run whose non-graded tests failed still exits 1 legitimately, so
    # only flag the report when *nothing* in it failed yet the runner says it did not succeed.
    nothing_failed = not any(
        o in (TestOutcome.FAILED, TestOutcome.ERROR) for o in outcomes.values()
    )
    if all_graded_passed and nothing_failed and runner_exit_code not in (0, 5):
        reasons.append(f"exit-code-mismatch: report says passed, runner exited {runner_exit_code}")
    if not fail_to_pass and not pass_to_pass:
        reasons.append("no-graded-tests: the task grades nothing")
    return (0 if reasons else 1), tuple(reasons)
