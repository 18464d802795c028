"""`Sandbox`: one isolated task environment, its agent tools and its grader.

Life cycle: `Sandbox.create(task, backend)` starts a backend session (network off, limits on)
and loads the prepared repository (pruned history, withheld tests). The agent then calls
`execute_bash`, `edit_via_str_replace` and finally `submit`, which ends the episode and grades
the agent's *patch*, not this sandbox: every agent process is killed, the diff against the base
is taken and filtered by the patch policy, and it is graded on a pristine tree in a fresh
sandbox with an isolated runner (`swe_sandbox._grading`, `swe_sandbox._runner`).
"""

from __future__ import annotations

import base64
import io
import json
import shlex
import tarfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import attrs

from swe_sandbox._archive import safe_extract
from swe_sandbox._backend import GRADER_DIR, WORKDIR, Backend, BackendSession, User
from swe_sandbox._docker_image import TASK_KEY_PATH, TASK_REPO_PATH
from swe_sandbox._errors import (
    EpisodeEndedError,
    GradingError,
    PatchApplyError,
    PathEscapeError,
    SandboxClosedError,
    SandboxError,
    StrReplaceError,
    TestCommandNotFoundError,
)
from swe_sandbox._grading import AgentFaultError, GradingPolicy, agent_patch, grade_patch, zero
from swe_sandbox._helpers import ESCAPE_EXIT, MISSING_EXIT, helper_command
from swe_sandbox._limits import Limits
from swe_sandbox._policy import filter_patch, task_layout
from swe_sandbox._prepare import PreparedRepo, prepare_repo, task_key
from swe_sandbox._results import ExecResult, GradeResult
from swe_sandbox._task import TaskSpec
from swe_sandbox._tools import confine, snippet, str_replace

#: Largest file the tools read or write through the exec channel.
MAX_FILE_BYTES = 16 << 20
#: Reset, as the agent uid: make every agent-owned directory readable again (mode-000 ones
#: included), then delete everything in the writable mounts and the agent's IPC objects.
_WIPE = (
    'for d in /work /tmp /dev/shm; do chmod -R u+rwx "$d" 2>/dev/null;'
    ' find "$d" -mindepth 1 -delete 2>/dev/null; done; ipcrm --all 2>/dev/null; true'
)
_LEFTOVERS = "find /work /tmp /dev/shm -mindepth 1 2>&1 | head -5"


@attrs.define
class SandboxMetrics:
    """Latencies of one sandbox in seconds (the pool aggregates them)."""

    create_s: float = 0.0
    prepare_s: float = 0.0
    exec_s: list[float] = attrs.field(factory=list)
    grade_s: list[float] = attrs.field(factory=list)


def _tar_of(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _test_program(command: str) -> str | None:
    """The program a test command runs first (after ``VAR=value`` assignments), if simple."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        if "=" in word and not word.startswith(("/", ".")):
            continue
        return None if word in {"cd", "(", "{", "source", "."} else word
    return None


class Sandbox:
    """One live sandbox. Thread-compatible, not thread-safe: drive it from one thread at a time
    (`AsyncSandbox` does this for asyncio code)."""

    def __init__(
        self,
        session: BackendSession,
        limits: Limits,
        backend_name: str,
        *,
        backend: Backend | None = None,
        image: str | None = None,
        masked: tuple[str, ...] = (),
        policy: GradingPolicy | None = None,
    ) -> None:
        self._session: BackendSession | None = session
        self._masked = masked
        self._limits = limits
        self.backend_name = backend_name
        self._backend = backend
        self._image = image
        self.policy = policy or GradingPolicy()
        #: Public id of this sandbox (the container name suffix / runtime directory name).
        self.id = session.sandbox_id
        self.task: TaskSpec | None = None
        self._prepared: PreparedRepo | None = None
        self.metrics = SandboxMetrics()
        self.submitted = False
        self._loads = 0

    # ----------------------------------------------------------------- life cycle
    @classmethod
    def start(
        cls,
        backend: Backend,
        limits: Limits | None = None,
        *,
        image: str | None = None,
        masked: tuple[str, ...] = (),
        policy: GradingPolicy | None = None,
    ) -> Sandbox:
        """Start an empty sandbox (no task loaded yet): what a warm pool keeps ready.

        `image`: an environment image (or a per-task image layered on one) to run on instead
        of the swe-sandbox base; `masked`: its directories to hide (its repository copy).
        """
        limits = limits or Limits()
        began = time.monotonic()
        session = backend.start(uuid.uuid4().hex[:16], limits, image=image, masked=masked)
        sandbox = cls(
            session,
            limits,
            backend.name,
            backend=backend,
            image=image,
            masked=masked,
            policy=policy,
        )
        sandbox.metrics.create_s = time.monotonic() - began
        return sandbox

    @classmethod
    def create(
        cls,
        task: TaskSpec,
        backend: Backend,
        limits: Limits | None = None,
        *,
        image: str | None = None,
        policy: GradingPolicy | None = None,
    ) -> Sandbox:
        """Prepare `task`, start a sandbox on its environment and load the task; on any error
        nothing is left.

        The sandbox runs on `image` if given (say the per-task layer of `build_task_image`),
        else on the task's `TaskSpec.environment_image`, else on the swe-sandbox base.
        """
        prepared = prepare_repo(task)  # bad sources fail here, before anything starts
        image = image or task.environment_image
        sandbox = cls.start(backend, limits, image=image, masked=task.masked_paths, policy=policy)
        try:
            sandbox.load(task, prepared=prepared)
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def load(
        self,
        task: TaskSpec,
        *,
        prepared: PreparedRepo | None = None,
        from_image: bool | None = None,
    ) -> None:
        """Put `task`'s agent-visible tree into the (empty) workdir and check its test command.

        The tree is copied from the image when the sandbox runs on this task's per-task layer
        (`build_task_image`: its key file names this task), else streamed in as a tar;
        `from_image` forces one way.
        """
        began = time.monotonic()
        prepared = prepared or prepare_repo(task)
        if from_image is None:
            from_image = self._image is not None and self._holds_task_layer(task)
        if from_image:
            loaded = self._exec(f"cp -a {TASK_REPO_PATH}/. {WORKDIR}/", timeout=120)
        else:
            loaded = self._exec(f"tar -x -C {WORKDIR} -f -", stdin=prepared.tar_bytes, timeout=120)
        if not loaded.ok:
            raise SandboxError(
                f"{task.instance_id}: loading the repository failed: {loaded.output}"
            )
        program = _test_program(task.test_command)
        if program is not None:
            found = self._exec(f"command -v {shlex.quote(program)}", timeout=30)
            if not found.ok:
                raise TestCommandNotFoundError(
                    f"{task.instance_id}: test command program {program!r} does not exist"
                )
        for command in task.setup_commands:
            done = self._exec(command, timeout=self._limits.grade_timeout_s)
            if not done.ok:
                raise SandboxError(f"{task.instance_id}: setup {command!r} failed: {done.output}")
        self.task, self._prepared, self.submitted = task, prepared, False
        # Fresh metrics per loaded task; a reused sandbox was not created for it.
        self.metrics = SandboxMetrics(
            create_s=self.metrics.create_s if not self._loads else 0.0,
            prepare_s=time.monotonic() - began,
        )
        self._loads += 1

    def _holds_task_layer(self, task: TaskSpec) -> bool:
        found = self._exec(f"cat {TASK_KEY_PATH} 2>/dev/null; true", timeout=30)
        return found.ok and found.output.strip() == task_key(task)

    @property
    def env(self) -> dict[str, str]:
        """The environment commands start from (the environment image's ``PATH`` included)."""
        return self._live().env

    @property
    def image(self) -> str | None:
        """The image this sandbox runs on (``None``: the swe-sandbox base)."""
        return self._image

    @property
    def masked(self) -> tuple[str, ...]:
        """The image directories hidden in this sandbox."""
        return self._masked

    def reset(self, task: TaskSpec | None = None) -> None:
        """A clean slate: kill agent processes, wipe ``/work``, ``/tmp``, ``/dev/shm``
        (unreadable agent directories included) and the agent's IPC objects, check that nothing
        is left, then load `task` (if given) and reopen the episode.

        If anything survives the wipe, this sandbox is removed and a new one of the same
        backend takes its place (a new `id`); `SandboxError` only if none can start.
        """
        self._live().kill_agent_processes()
        self.task, self._prepared, self.submitted = None, None, False
        self._exec(_WIPE, timeout=120)
        self._exec(f"rm -rf {GRADER_DIR}/* 2>/dev/null; true", user="root", timeout=60)
        left = self._exec(_LEFTOVERS, timeout=60)
        if not left.ok or left.output.strip():
            self._replace_session(f"reset could not wipe it ({left.output.strip()[:200]})")
        if task is not None:
            self.load(task)

    def _replace_session(self, why: str) -> None:
        """Remove this sandbox and continue in a new one of the same backend, limits and image
        (a new `id`); without a backend the sandbox is only closed and `SandboxError` raised."""
        self.close()
        if self._backend is None:
            raise SandboxError(f"sandbox removed: {why}")
        try:
            session = self._backend.start(
                uuid.uuid4().hex[:16], self._limits, image=self._image, masked=self._masked
            )
        except SandboxError as exc:
            raise SandboxError(f"sandbox removed ({why}); no replacement: {exc}") from exc
        self._session, self.id = session, session.sandbox_id

    def close(self) -> None:
        """Kill everything in the sandbox and remove it; idempotent."""
        session, self._session = self._session, None
        if session is not None:
            session.close()

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def closed(self) -> bool:
        return self._session is None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- plumbing
    def _live(self) -> BackendSession:
        if self._session is None:
            raise SandboxClosedError("sandbox is closed")
        return self._session

    def _exec(
        self,
        command: str,
        *,
        user: User = "agent",
        timeout: float | None = None,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ExecResult:
        return self._live().exec(
            command,
            user=user,
            timeout=timeout or self._limits.exec_timeout_s,
            stdin=stdin,
            env=env,
            output_limit=output_limit or self._limits.output_limit_bytes,
        )

    def _helper(self, op: str, *args: str, stdin: bytes | None = None) -> ExecResult:
        done = self._exec(
            helper_command(op, *args), stdin=stdin, timeout=120, output_limit=2 * MAX_FILE_BYTES
        )
        if done.exit_code == ESCAPE_EXIT:
            raise PathEscapeError(done.output.strip())
        if done.exit_code == MISSING_EXIT:
            raise FileNotFoundError(done.output.strip())
        if done.truncated:
            raise SandboxError(f"{op}: more than {MAX_FILE_BYTES} bytes")
        if not done.ok:
            raise SandboxError(f"{op} failed ({done.exit_code}): {done.output.strip()[-2000:]}")
        return done

    def _task(self) -> tuple[TaskSpec, PreparedRepo]:
        if self.task is None or self._prepared is None:
            raise SandboxError("no task is loaded in this sandbox")
        return self.task, self._prepared

    # ----------------------------------------------------------------- commands and files
    def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        user: User = "agent",
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run any shell command in the workdir (``user="root"`` only for trusted harness code)."""
        return self._exec(command, user=user, timeout=timeout, stdin=stdin, env=env)

    def read_file(self, path: str) -> bytes:
        """Bytes of a workdir file; symlinks and paths outside the workdir are refused."""
        confine(path)
        return base64.b64decode(self._helper("read", path).output)

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a workdir file (as the agent uid); same confinement as reads."""
        relative = confine(path)[len(WORKDIR) + 1 :]
        if not relative:
            raise PathEscapeError(f"{path!r} is the workdir itself")
        self._helper("put", "[]", stdin=_tar_of({relative: data}))

    def copy_in(self, host_path: str | Path, dest: str = ".") -> None:
        """Copy a host file or directory into the workdir under `dest`.

        Host symlinks, special files and destinations outside the workdir are refused before
        anything is written.
        """
        source = Path(host_path)
        if source.is_symlink() or not source.exists():
            raise PathEscapeError(f"{source} is a symlink or does not exist: refused")
        base = confine(dest)[len(WORKDIR) + 1 :]
        files: dict[str, bytes] = {}
        entries = [source] if source.is_file() else sorted(source.rglob("*"))
        for entry in entries:
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
                raise PathEscapeError(f"{entry} is a symlink or special file: refused")
            if entry.is_file():
                relative = entry.name if entry == source else entry.relative_to(source).as_posix()
                files["/".join(p for p in (base, relative) if p)] = entry.read_bytes()
        self._helper("put", "[]", stdin=_tar_of(files))

    def copy_out(self, path: str, host_dest: str | Path) -> Path:
        """Copy a workdir file or directory to `host_dest` (a directory, created if needed).

        The archive is checked on the host before extraction: names that climb out of
        `host_dest` and links that resolve outside the copied tree raise `PathEscapeError` and
        nothing is written; links inside it are kept, devices skipped.
        """
        confine(path)
        data = base64.b64decode(self._helper("pack", path).output)
        dest = Path(host_dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            safe_extract(archive, dest)
        return dest

    # ----------------------------------------------------------------- agent tools
    def execute_bash(self, command: str, timeout: float | None = None) -> ExecResult:
        """The agent's shell tool: output capped with a marker, whole process group killed on
        timeout."""
        self._episode_open()
        began = time.monotonic()
        try:
            return self._exec(command, timeout=timeout)
        finally:
            self.metrics.exec_s.append(time.monotonic() - began)

    def edit_via_str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace the unique occurrence of `old_str` in `path`; return a numbered snippet.

        Raises `StrReplaceError` (zero or several matches, with line numbers) or
        `PathEscapeError` (outside the workdir, or a symlink).
        """
        self._episode_open()
        began = time.monotonic()
        try:
            raw = self.read_file(path)
            try:
                text = raw.decode()
            except UnicodeDecodeError as exc:
                raise StrReplaceError(f"{path}: not UTF-8 text") from exc
            new_text, line = str_replace(text, old_str, new_str, path=path)
            self.write_file(path, new_text.encode())
            return f"Edited {path} at line {line}:\n{snippet(new_text, line)}"
        finally:
            self.metrics.exec_s.append(time.monotonic() - began)

    def submit(self) -> GradeResult:
        """End the episode and grade the agent's patch (agent tool).

        Afterwards every agent tool raises `EpisodeEndedError` until `reset`. Never raises
        because of what the agent did: that is reward 0 with a reason code.
        """
        self._episode_open()
        self.submitted = True
        return self.grade()

    def _episode_open(self) -> None:
        if self.submitted:
            raise EpisodeEndedError("the episode ended with submit(); reset() to reuse")

    # ----------------------------------------------------------------- patches
    def apply_patch(self, patch: str) -> None:
        """Apply a unified diff to the workdir (``git apply``); `PatchApplyError` if it does not."""
        if not patch.strip():
            return
        data = patch.encode("utf-8", "surrogateescape")  # a diff() of non-UTF-8 files
        done = self._exec("git apply --whitespace=nowarn -", stdin=data, timeout=120)
        if not done.ok:
            raise PatchApplyError(f"patch does not apply: {done.output.strip()[-2000:]}")

    def diff(self) -> str:
        """Exactly the patch `grade` / `submit` would grade now: the whole working tree against
        the base commit (ignored files, binaries, modes and symlinks included), filtered by the
        patch policy. ``grade_patch(task, diff, backend)`` reproduces the reward."""
        task, prepared = self._task()
        try:
            patch = agent_patch(self, prepared)
        except AgentFaultError as exc:
            raise SandboxError(str(exc)) from exc
        return filter_patch(patch, task_layout(task, prepared)).patch

    # ----------------------------------------------------------------- grading
    def grade(self) -> GradeResult:
        """Grade the agent's patch in a fresh sandbox (see `swe_sandbox._grading`).

        Kills every agent process, takes the diff against the base, filters it by the patch
        policy and grades it on a pristine tree in a sandbox of its own; this sandbox is left
        as it was, so it can be graded again (buggy tree, then gold: what curation needs).
        Reward 0 with a reason for anything the agent caused; `GradingError` only when no
        grading sandbox can start.
        """
        task, prepared = self._task()
        began = time.monotonic()
        self._live().kill_agent_processes()
        try:
            patch = agent_patch(self, prepared)
        except AgentFaultError as exc:
            result = zero(task, str(exc), began)
        else:
            result = grade_patch(
                task,
                patch,
                self._require_backend(),
                limits=self._limits,
                image=self._image,
                masked=self._masked,
                policy=self.policy,
                prepared=prepared,
            )
        self.metrics.grade_s.append(result.duration_s)
        return result

    def _require_backend(self) -> Backend:
        if self._backend is None:
            raise GradingError("this sandbox was built without its backend: it cannot grade")
        return self._backend

    def run_internal(
        self,
        command: str,
        *,
        user: User = "agent",
        timeout: float | None = None,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ExecResult:
        """Harness-side command (no episode check); what grading uses."""
        return self._exec(
            command, user=user, timeout=timeout, stdin=stdin, env=env, output_limit=output_limit
        )

    def kill_agent_processes(self) -> None:
        """Kill every process of the agent uid in the sandbox."""
        self._live().kill_agent_processes()

    def restore(self, files: Mapping[str, bytes | None]) -> None:
        """Write `files` into the workdir (``None`` deletes); symlinked parents are refused."""
        writes = {p: c for p, c in files.items() if c is not None}
        self._helper("put", json.dumps(sorted(files)), stdin=_tar_of(writes))
