"""The scorer: swe-sandbox's grader, exactly as training uses it (Arctic-SWE §4: counterfactuals are
"scored with the training scorer"), plus a host-side view of a task's buggy tree for judges.

A :class:`Scorer` applies a patch to the task's buggy tree inside a sandbox and grades it with
the reward contract; ``run`` executes a command on a patched tree (the instrumentation probes of
Pipeline 1 and of test strengthening). :class:`SandboxScorer` keeps one sandbox per task and
resets it between patches; measured, this is on par with a fresh sandbox per patch (the graded
test run dominates; see ``benchmarks/curate_judge_cost.py``), but it keeps one live sandbox per
worker instead of churning them.
"""

from __future__ import annotations

import io
import tarfile
from typing import Protocol

from swe_curate._errors import (
    CurateError,
    CuratePatchApplyError,
    MalformedRowError,
    MissingRepoError,
    MissingTestCommandError,
    ScorerError,
)
from swe_sandbox import (
    Backend,
    BaseCommitNotFoundError,
    ExecResult,
    GradeResult,
    Limits,
    PatchApplyError,
    RepoNotFoundError,
    Sandbox,
    SandboxError,
    TaskSpec,
    TaskSpecError,
    TestCommandNotFoundError,
    prepare_repo,
)


class Scorer(Protocol):
    """Grades patches against a task's buggy tree."""

    def grade(self, task: TaskSpec, patch: str) -> GradeResult:
        """Apply ``patch`` (may be empty: the buggy tree) and grade with the reward contract."""
        ...

    def run(self, task: TaskSpec, patch: str, command: str, *, timeout: float) -> ExecResult:
        """Apply ``patch``, restore the graded tests from the task, run ``command`` in the
        repository root."""
        ...


def input_error(task: TaskSpec, exc: SandboxError, doing: str) -> CurateError:
    """The swe-curate error for a sandbox failure: a typed input error when the *task* is at
    fault (missing repository or test program, bad spec), else :class:`ScorerError`."""
    message = f"{task.instance_id}: {doing}: {exc}"
    if isinstance(exc, RepoNotFoundError):
        return MissingRepoError(message)
    if isinstance(exc, TestCommandNotFoundError):
        return MissingTestCommandError(message)
    if isinstance(exc, TaskSpecError | BaseCommitNotFoundError):
        return MalformedRowError(message)
    return ScorerError(message)


class SandboxScorer:
    """:class:`Scorer` on a swe-sandbox backend (namespace or Docker).

    Raises :class:`swe_curate.CuratePatchApplyError` when a patch does not apply,
    :class:`swe_curate.TaskInputError` subclasses when the task is at fault (missing repository,
    missing test program) and :class:`ScorerError` for every other sandbox failure, so a
    pipeline can record each against the task and move on.
    """

    def __init__(self, backend: Backend, limits: Limits | None = None) -> None:
        self.backend = backend
        self.limits = limits or Limits()
        self._sandbox: Sandbox | None = None
        self._task_id: str | None = None
        self.grades = 0
        self.replacements = 0
        """Sandboxes that failed to reset and were replaced by a fresh one."""

    def __enter__(self) -> SandboxScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the live sandbox, if any (idempotent)."""
        sandbox, self._sandbox, self._task_id = self._sandbox, None, None
        if sandbox is not None:
            self._discard(sandbox)

    def _open(self, task: TaskSpec) -> Sandbox:
        """A sandbox with ``task`` loaded (overridden to draw from a pool)."""
        return Sandbox.create(task, self.backend, self.limits)

    def _discard(self, sandbox: Sandbox) -> None:
        """Give up a sandbox this scorer no longer uses."""
        sandbox.close()

    def _fresh(self, task: TaskSpec) -> Sandbox:
        if self._sandbox is not None and self._task_id == task.instance_id:
            try:
                self._sandbox.reset(task)
                return self._sandbox
            except SandboxError:
                # A sandbox that died under us (its init gone, a wipe that failed) is replaced
                # once by a fresh one; only a fresh one failing is the task's error.
                self.replacements += 1
                self.close()
        self.close()
        try:
            self._sandbox = self._open(task)
            self._task_id = task.instance_id
        except SandboxError as exc:
            self.close()
            raise input_error(task, exc, "cannot start a sandbox") from exc
        return self._sandbox

    def _patched(self, task: TaskSpec, patch: str) -> Sandbox:
        sandbox = self._fresh(task)
        try:
            sandbox.apply_patch(patch)
        except PatchApplyError as exc:
            raise CuratePatchApplyError(str(exc)) from exc
        return sandbox

    def grade(self, task: TaskSpec, patch: str) -> GradeResult:
        sandbox = self._patched(task, patch)
        try:
            result = sandbox.grade()
        except SandboxError as exc:
            self.close()
            raise ScorerError(f"{task.instance_id}: grading failed: {exc}") from exc
        self.grades += 1
        return result

    def run(self, task: TaskSpec, patch: str, command: str, *, timeout: float) -> ExecResult:
        sandbox = self._patched(task, patch)
        try:
            # The graded tests are withheld from the tree; write them back exactly as grading
            # would (from the task, never from the patched tree).
            for path, content in prepare_repo(task).restore_files.items():
                if content is not None:
                    sandbox.write_file(path, content)
            return sandbox.run(command, timeout=timeout)
        except SandboxError as exc:
            self.close()
            raise ScorerError(f"{task.instance_id}: command failed: {exc}") from exc


class TaskTree:
    """Host-side read-only view of a task's buggy tree *with the graded tests restored*.

    Built from swe-sandbox's prepared repository (the very tree the agent starts from) plus the
    task's restore files, so the judge reads what grading will run.
    """

    def __init__(self, task: TaskSpec) -> None:
        try:
            prepared = prepare_repo(task)
        except SandboxError as exc:
            raise input_error(task, exc, "cannot prepare the repository") from exc
        files: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(prepared.tar_bytes)) as archive:
            for member in archive.getmembers():
                name = member.name.removeprefix("./")
                if not member.isfile() or name.startswith(".git/"):
                    continue
                extracted = archive.extractfile(member)
                if extracted is not None:
                    files[name] = extracted.read()
        for path, content in prepared.restore_files.items():
            if content is None:
                files.pop(path, None)
            else:
                files[path] = content
        self._files = files

    def read_file(self, path: str) -> str:
        """UTF-8 text of a file; ``FileNotFoundError`` if absent, ``ValueError`` if binary."""
        path = path.removeprefix("./")
        if path not in self._files:
            raise FileNotFoundError(path)
        try:
            return self._files[path].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text") from exc

    def list_files(self) -> list[str]:
        return sorted(self._files)
