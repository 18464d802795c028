"""The interface both backends implement: start a session, run commands in it, tear it down."""

from __future__ import annotations

from typing import Literal, Protocol

from swe_sandbox._limits import Limits
from swe_sandbox._results import ExecResult

#: The repository root inside every sandbox.
WORKDIR = "/work"
#: Grader-only directory: root-owned, empty during the rollout, written only at grading time.
GRADER_DIR = "/grader"
#: Environment every command starts from (no host variables leak in).
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": WORKDIR,
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PIP_NO_INPUT": "1",
}
User = Literal["agent", "root", "tester"]
#: The graded test run's uid: not the owner of the tree (the agent, 1000), so the code under
#: test can import the tree but not change it.
TESTER_UID = 1001


class BackendSession(Protocol):
    """One live sandbox of a backend."""

    @property
    def sandbox_id(self) -> str: ...

    @property
    def env(self) -> dict[str, str]:
        """The environment commands start from (`BASE_ENV`, with the environment image's
        ``PATH`` and variables when the sandbox runs on one)."""
        ...

    def exec(
        self,
        command: str,
        *,
        user: User = "agent",
        timeout: float,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        output_limit: int,
    ) -> ExecResult:
        """Run `command` with ``bash -c`` in `WORKDIR`; kill its process group on timeout."""
        ...

    def kill_agent_processes(self) -> None:
        """Kill every process of the agent user (before grading, after a timeout)."""
        ...

    def close(self) -> None:
        """Kill everything, remove every trace; idempotent."""
        ...


class Backend(Protocol):
    """A way to create sandboxes (Docker, namespaces, or a third-party backend; see
    `swe_sandbox.create_backend`)."""

    name: str

    def check(self) -> None:
        """Raise `BackendUnavailableError` unless this backend can start sandboxes here (cheap:
        privileges, tools, an engine answering; no image is built)."""
        ...

    def start(
        self,
        sandbox_id: str,
        limits: Limits,
        *,
        image: str | None = None,
        masked: tuple[str, ...] = (),
    ) -> BackendSession:
        """Create and start one sandbox (workdir empty, network off, limits applied) on the
        base or on environment `image`, with the directories `masked` hidden under an empty
        read-only tmpfs (the image's own repository copy)."""
        ...

    def reap_orphans(self) -> int:
        """Remove sandboxes whose owner process is gone; return how many were reaped."""
        ...
