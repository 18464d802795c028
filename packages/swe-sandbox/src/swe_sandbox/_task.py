"""`TaskSpec` and where a task's repository comes from (dataset rows: `swe_sandbox._rows`).

The task specification (ARCHITECTURE.md §3, swe-sandbox): a task is a repository
at a base commit plus a problem statement, a gold patch, the test patch whose files are graded,
the FAIL_TO_PASS / PASS_TO_PASS lists and the test command; the reward contract lives in
`swe_sandbox._results.reward_contract`.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import attrs

from swe_sandbox._errors import TaskSpecError
from swe_sandbox._patch import files_in_patch

#: Test command used when a row does not name one: our report plugin is injected either way.
DEFAULT_TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider"


class RepoKind(enum.Enum):
    """Where the repository of a task comes from."""

    DIRECTORY = "directory"  # a local directory (a git checkout or a plain tree)
    TARBALL = "tarball"  # a local .tar/.tar.gz/.tgz archive of the tree (an sdist, say)
    IMAGE = "image"  # a prebuilt Docker image holding the repository at `path_in_image`


@attrs.frozen(kw_only=True)
class RepoSource:
    """A task's repository source.

    Use the constructors `RepoSource.directory`, `.tarball` and `.image`.
    """

    kind: RepoKind
    location: str
    path_in_image: str = "/testbed"
    strip_components: int = 0

    @classmethod
    def directory(cls, path: str | Path) -> RepoSource:
        return cls(kind=RepoKind.DIRECTORY, location=str(path))

    @classmethod
    def tarball(cls, path: str | Path, *, strip_components: int = 0) -> RepoSource:
        """An archive; `strip_components` drops leading path parts (1 for an sdist)."""
        return cls(kind=RepoKind.TARBALL, location=str(path), strip_components=strip_components)

    @classmethod
    def image(cls, reference: str, *, path_in_image: str = "/testbed") -> RepoSource:
        return cls(kind=RepoKind.IMAGE, location=reference, path_in_image=path_in_image)


def _check_relative_path(path: str, field: str) -> str:
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts:
        raise TaskSpecError(f"{field}: {path!r} must be a relative path inside the repository")
    return str(pure)


def _str_tuple(value: Any, field: str) -> tuple[str, ...]:
    """Accept a list or a JSON-encoded list (SWE-bench stores lists as JSON strings)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise TaskSpecError(f"{field}: not a JSON list: {exc}") from exc
    if value is None:
        return ()
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise TaskSpecError(f"{field}: expected a list of strings, got {type(value).__name__}")
    return tuple(value)


@attrs.frozen(kw_only=True)
class TaskSpec:
    """One SWE task and its reward contract.

    Attributes:
        instance_id: unique id (SWE-bench ``instance_id``), also used in image tags and labels.
        repo: where the repository comes from.
        base_commit: commit the agent starts from; ``None`` for a plain tree (it becomes the
            single commit of a fresh repository).
        problem_statement: the issue text the agent sees.
        gold_patch: the reference fix (a unified diff); never enters the agent's sandbox.
        test_patch: diff adding/updating the graded tests; withheld until grading.
        graded_files: paths restored from the task before grading and withheld before; by
            default every file the test patch touches.
        fail_to_pass: test ids (pytest node ids) that must pass after the fix.
        pass_to_pass: test ids that must keep passing.
        test_command: shell command run in the repo root to grade (our report plugin is added
            through ``PYTEST_ADDOPTS``; results never come from its stdout).
        result_parser: ``"pytest-report"`` (the out-of-reach per-test report; the default).
        runner_files: extra task-owned files (path -> content) restored for grading only,
            e.g. a ``run_tests.sh``; withheld like the graded tests.
        setup_commands: commands run (as the agent user, before any agent turn) after copy-in.
        allowed_config_paths: glob patterns of test configuration / packaging files (say
            ``setup.cfg``) whose changes this task grades; by default the patch policy drops
            changes to them (see `swe_sandbox._policy`).
        environment: Docker image reference of the task's own environment (its interpreter,
            installed packages and system tools); rollout and grade run on it on both
            backends. ``None``: the repository image when `repo` is an image, else the
            swe-sandbox base (see `environment_image`).
    """

    instance_id: str
    repo: RepoSource
    base_commit: str | None = None
    problem_statement: str = ""
    gold_patch: str = ""
    test_patch: str = ""
    graded_files: tuple[str, ...] = attrs.field(default=())
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    test_command: str = DEFAULT_TEST_COMMAND
    result_parser: str = "pytest-report"
    runner_files: Mapping[str, str] = attrs.field(factory=dict)
    setup_commands: tuple[str, ...] = ()
    allowed_config_paths: tuple[str, ...] = ()
    environment: str | None = None

    def __attrs_post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}", self.instance_id or ""):
            raise TaskSpecError(
                f"instance_id {self.instance_id!r}: use letters, digits and ._@+- only"
            )
        if self.base_commit is not None and not re.fullmatch(
            r"[0-9a-fA-F]{4,64}", self.base_commit
        ):
            raise TaskSpecError(f"base_commit {self.base_commit!r} is not a hex commit id")
        if self.result_parser != "pytest-report":
            raise TaskSpecError(f"result_parser {self.result_parser!r}: only 'pytest-report'")
        if not self.test_command.strip():
            raise TaskSpecError("test_command is empty")
        if self.environment is not None and not (
            isinstance(self.environment, str)
            and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}", self.environment)
        ):
            raise TaskSpecError(f"environment {self.environment!r} is not an image reference")
        for path in (*self.graded_files, *self.runner_files):
            _check_relative_path(path, "graded_files/runner_files")
        if not self.graded_files and self.test_patch:
            object.__setattr__(self, "graded_files", files_in_patch(self.test_patch))

    @property
    def environment_image(self) -> str | None:
        """The image sandboxes of this task run on: `environment`, else the repository image
        (a SWE-bench instance image is both), else ``None`` (the swe-sandbox base)."""
        if self.environment:
            return self.environment
        return self.repo.location if self.repo.kind is RepoKind.IMAGE else None

    @property
    def masked_paths(self) -> tuple[str, ...]:
        """Directories of the environment image hidden from every sandbox (its repo copy)."""
        return (self.repo.path_in_image,) if self.repo.kind is RepoKind.IMAGE else ()

    @property
    def withheld_paths(self) -> tuple[str, ...]:
        """Every path the agent must not see and grading restores from the task."""
        return tuple(dict.fromkeys((*self.graded_files, *self.runner_files)))

    @property
    def graded_tests(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.fail_to_pass, *self.pass_to_pass)))
