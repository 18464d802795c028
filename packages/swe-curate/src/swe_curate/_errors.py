"""Typed errors. Every failure a curation run can meet maps onto one of these, and each one is
recorded against its task as a rejection reason instead of stopping the run."""

from __future__ import annotations

from swe_sandbox import PatchApplyError


class CurateError(Exception):
    """Base class of every error raised by swe-curate."""


class TaskInputError(CurateError):
    """The task itself is unusable as given (a problem of the row, not of the sandbox)."""


class MalformedRowError(TaskInputError):
    """A dataset row is missing a field, has the wrong type, or cannot be parsed."""


class MissingRepoError(TaskInputError):
    """The repository a task names (directory, tarball, image) does not exist here."""


class MissingTestCommandError(TaskInputError):
    """The task's test command is empty or names a program the sandbox does not have."""


class PatchFormatError(CurateError):
    """A text is not a well-formed unified diff."""


class CuratePatchApplyError(CurateError, PatchApplyError):
    """A unified diff does not apply to the tree it was meant for (context mismatch, missing file).

    The same failure as :class:`swe_sandbox.PatchApplyError` (which it subclasses, so
    ``except swe_sandbox.PatchApplyError`` catches both), raised as a :class:`CurateError` so a
    curation stage records it against the task like every other curation failure.
    """


class MutationError(CurateError):
    """A mutator cannot produce a counterfactual for this patch (nothing to mutate, bad source)."""


class JudgeError(CurateError):
    """A judge failed to answer: transport error, protocol violation or unusable reply."""


class JudgeTimeoutError(JudgeError):
    """A judge did not answer within its deadline, after every retry."""


class JudgeGarbageError(JudgeError):
    """A judge answered, but the answer is not what the protocol asks for."""


class ScorerError(CurateError):
    """The scorer (the sandbox grader) could not produce a score for a patch."""
