"""Typed errors: every failure a caller can act on has its own class."""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every error this package raises on purpose."""


class TaskSpecError(SandboxError, ValueError):
    """A task row or `TaskSpec` field is malformed (missing field, bad JSON list, bad path)."""


class RepoNotFoundError(SandboxError):
    """The task's repository source (directory, tarball or image) does not exist."""


class ImageNotFoundError(RepoNotFoundError):
    """A Docker image a task names (its repository or its environment) is not present locally
    (nothing is ever pulled: build it with ``swe-sandbox image build-env`` / ``image build``)."""


class BaseCommitNotFoundError(SandboxError):
    """The task's base commit is not an object of its repository."""


class TestCommandNotFoundError(SandboxError):
    """The task's test command names a program that does not exist inside the sandbox."""

    __test__ = False  # keep pytest from collecting this class as a test


class ImageBuildError(SandboxError):
    """A base rootfs or a Docker image could not be built (debootstrap, import or build failed)."""


class EnvironmentBuildError(ImageBuildError):
    """An environment or instance image could not be built; `step` names the failing step
    (``base``, ``wheelhouse``, ``repo``, ``env-image``, ``instance-image``)."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"step {step}: {message}")
        self.step = step


class PatchApplyError(SandboxError):
    """A patch (gold, test or agent) does not apply to the sandbox's tree."""


class PathEscapeError(SandboxError, PermissionError):
    """A path leaves the sandbox workdir (``..``, absolute path elsewhere, or a symlink)."""


class StrReplaceError(SandboxError):
    """`edit_via_str_replace` found zero or several matches, or the file cannot be edited."""


class BackendUnavailableError(SandboxError):
    """The requested backend cannot run on this machine (no engine, no privileges, no rootfs)."""


class SandboxClosedError(SandboxError):
    """The sandbox was closed (or reaped) and cannot run anything any more."""


class GradingError(SandboxError):
    """Grading could not run at all (distinct from a graded failure, which is reward 0)."""


class EpisodeEndedError(SandboxError):
    """An agent tool was called after `Sandbox.submit` ended the episode (reset to reuse)."""


class UnsupportedTestCommandError(TaskSpecError, GradingError):
    """The task's test command is not pytest (or a ``&&`` / ``;`` list of pytest calls that
    agree on their options): it cannot be run with the grader's guarantees, so it is refused.
    A task error, never the agent's: trainers drop it like any grading failure."""


class UnknownBackendError(SandboxError, ValueError):
    """No backend is registered under the name asked for; `known` lists the names there are."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown sandbox backend {name!r}; known: {', '.join(known)}")
        self.name = name
        self.known = known


class BackendPluginError(SandboxError):
    """A third-party backend's entry point (group ``swe_sandbox.backends``) cannot be loaded, or
    what it names is not a backend factory; the message names the entry point."""
