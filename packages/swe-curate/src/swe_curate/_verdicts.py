"""The verdict taxonomy (Arctic-SWE §4): one stable code per outcome of a task.

A task is *admitted* by Pipeline 1 when execution alone finds nothing wrong, and *accepted* by
Pipeline 2 when the counterfactual judge also finds the issue/tests/gold triple in agreement.
Every other code is a rejection reason; the string values are stable and appear in the JSON-lines
records, so downstream tools may match on them.
"""

from __future__ import annotations

import enum


class Verdict(enum.StrEnum):
    """Outcome of one stage for one task."""

    # -- positive outcomes ---------------------------------------------------------------------
    ADMITTED = "admitted"
    """Pipeline 1: F2P fail on buggy and pass on gold, P2P pass on both, nothing flaky."""
    ACCEPTED = "accepted"
    """Pipeline 2: gold fixes the issue, the tests grade the issue, the issue states the tests."""
    ISSUE_REWRITTEN = "issue_rewritten"
    """Pipeline 2: accepted after the judge rewrote the issue to state what the tests demand."""
    STRENGTHENED = "strengthened"
    """Strengthening: a too_loose suite was repaired; gold passes, every known wrong patch fails."""
    INJECTED = "injected"
    """Deck building: a mutant that fails at least one test and passes the rest."""

    # -- input problems -----------------------------------------------------------------------
    MALFORMED_ROW = "malformed_row"
    """A row that does not parse, or a task with no gold patch / no graded tests."""
    MISSING_REPO = "missing_repo"
    """The repository the row names (directory, tarball, image) is not here."""
    MISSING_TEST_COMMAND = "missing_test_command"
    """The test command is empty or its program does not exist in the sandbox."""
    PATCH_DOES_NOT_APPLY = "patch_does_not_apply"

    # -- Pipeline 1 (execution only) ----------------------------------------------------------
    NO_FAIL_TO_PASS = "no_fail_to_pass"
    """A FAIL_TO_PASS test already passes on the buggy tree (or the list is empty)."""
    GOLD_FAILS = "gold_fails"
    """A FAIL_TO_PASS test still fails on the gold tree."""
    PASS_TO_PASS_BROKEN = "pass_to_pass_broken"
    """A PASS_TO_PASS test fails on the buggy or the gold tree."""
    FLAKY = "flaky"
    """A graded test changed outcome across reruns of the same tree."""

    # -- Pipeline 2 (counterfactual judge) ----------------------------------------------------
    GOLD_DOES_NOT_FIX = "gold_does_not_fix"
    TOO_LOOSE = "too_loose"
    """A plausible wrong patch gets full reward from the training scorer."""
    OVER_RESTRICTIVE = "over_restrictive"
    """A correct alternative patch gets zero reward from the training scorer."""

    # -- strengthening / injection ------------------------------------------------------------
    NOT_STRENGTHENABLE = "not_strengthenable"
    NO_VALID_MUTANT = "no_valid_mutant"
    SKIPPED = "skipped"
    """A stage that does not apply to this task (the reason says why; e.g. strengthening a
    task the judge accepted). Neither kept nor a rejection by itself."""

    # -- infrastructure -------------------------------------------------------------------------
    JUDGE_TIMEOUT = "judge_timeout"
    JUDGE_GARBAGE = "judge_garbage"
    JUDGE_ERROR = "judge_error"
    SANDBOX_ERROR = "sandbox_error"

    @property
    def is_positive(self) -> bool:
        """True for the outcomes that keep the task in the deck."""
        return self in _POSITIVE

    @classmethod
    def for_input_error(cls, error: BaseException) -> Verdict:
        """The input-problem verdict of a :class:`swe_curate.TaskInputError` (by class name,
        so this module stays import-free)."""
        names = {klass.__name__ for klass in type(error).__mro__}
        if "MissingRepoError" in names:
            return cls.MISSING_REPO
        if "MissingTestCommandError" in names:
            return cls.MISSING_TEST_COMMAND
        return cls.MALFORMED_ROW


_POSITIVE = frozenset(
    {
        Verdict.ADMITTED,
        Verdict.ACCEPTED,
        Verdict.ISSUE_REWRITTEN,
        Verdict.STRENGTHENED,
        Verdict.INJECTED,
    }
)
