"""The Docker backend (the ``docker`` SDK): one container per sandbox.

``network_mode="none"``, every capability dropped, ``no-new-privileges``, the agent uid 1000,
a read-only root filesystem with size-capped tmpfs at ``/work`` (the disk limit), ``/tmp`` and
``/grader``, and memory / memory+swap / pids / CPU limits. Commands run through ``docker exec``
under ``timeout -s KILL`` (which signals the command's whole process group); stdin is streamed
over the hijacked exec socket and output is read frame by frame into a bounded buffer.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any

from swe_sandbox._backend import BASE_ENV, GRADER_DIR, TESTER_UID, WORKDIR, User
from swe_sandbox._docker_image import TASK_REPO_PATH, docker_client, ensure_base_image
from swe_sandbox._environment import inspect_image, masked_paths, sandbox_env
from swe_sandbox._errors import (
    BackendUnavailableError,
    ImageNotFoundError,
    SandboxClosedError,
    SandboxError,
)
from swe_sandbox._limits import Limits
from swe_sandbox._namespace import owner_alive, owner_token, runtime_root
from swe_sandbox._output import BoundedOutput
from swe_sandbox._prepare import AGENT_UID
from swe_sandbox._results import ExecResult
from swe_sandbox._rootfs import BaseImageSpec
from swe_sandbox._watchdog import ensure_watchdog

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

LABEL = "swe-sandbox.managed"
OWNER_LABEL = "swe-sandbox.owner"
HOST_LABEL = "swe-sandbox.host"
#: The caller's runtime root (``$SWE_SANDBOX_RUNTIME``): janitor and watchdog touch only
#: containers started under the same root.
RUNTIME_LABEL = "swe-sandbox.runtime"
#: Extra seconds the host waits past the in-container timeout before it intervenes itself.
HOST_GRACE_S = 5.0


def _host_id() -> str:
    return socket.gethostname()


def _read_frames(raw: socket.socket, sink: BoundedOutput, deadline: float) -> bool:
    """Read multiplexed exec frames until EOF; False if `deadline` passed first."""
    pending = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        raw.settimeout(min(remaining, 1.0))
        try:
            chunk = raw.recv(1 << 16)
        except TimeoutError:
            continue
        if not chunk:
            return True
        pending += chunk
        while len(pending) >= 8:
            (size,) = struct.unpack(">I", pending[4:8])
            if len(pending) < 8 + size:
                break
            sink.feed(pending[8 : 8 + size])
            pending = pending[8 + size :]


class DockerSession:
    """One container sandbox."""

    def __init__(
        self,
        client: docker.DockerClient,
        container: Container,
        sandbox_id: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self._client = client
        self._container: Container | None = container
        self._id = sandbox_id
        self._env = dict(env or BASE_ENV)

    @property
    def sandbox_id(self) -> str:
        return self._id

    @property
    def env(self) -> dict[str, str]:
        return dict(self._env)

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
        if self._container is None:
            raise SandboxClosedError(f"sandbox {self._id} is closed")
        api = self._client.api
        started = time.monotonic()
        argv = ["timeout", "-s", "KILL", f"{timeout:.3f}", "/bin/bash", "-c", command]
        uid = {"agent": f"{AGENT_UID}:{AGENT_UID}", "tester": f"{TESTER_UID}:{TESTER_UID}"}.get(
            user, "0:0"
        )
        exec_id = api.exec_create(
            self._container.id,
            argv,
            stdin=stdin is not None,
            user=uid,
            environment={**self._env, **(env or {})},
            workdir=WORKDIR,
        )["Id"]
        response: Any = api.exec_start(exec_id, socket=True)
        raw: socket.socket = getattr(response, "_sock", response)
        writer = None
        if stdin is not None:
            writer = threading.Thread(target=_send_stdin, args=(raw, stdin), daemon=True)
            writer.start()
        sink = BoundedOutput(output_limit)
        try:
            finished = _read_frames(raw, sink, started + timeout + HOST_GRACE_S)
        finally:
            with contextlib.suppress(OSError):
                raw.close()
            if writer is not None:
                writer.join(timeout=1.0)
        info = api.exec_inspect(exec_id)
        code = info.get("ExitCode")
        elapsed = time.monotonic() - started
        timed_out = not finished or (code == 137 and elapsed >= timeout)
        if timed_out:  # what the group kill missed (forks racing it, setsid escapes)
            self.kill_agent_processes()
        return ExecResult(
            exit_code=137 if timed_out or code is None else int(code),
            output=sink.text(),
            timed_out=timed_out,
            truncated=sink.truncated,
            output_bytes=sink.total,
            duration_s=elapsed,
        )

    def kill_agent_processes(self) -> None:
        if self._container is None:
            return
        # kill(-1) as the agent uid reaches every agent process but itself and PID 1 (the init).
        api = self._client.api
        exec_id = api.exec_create(
            self._container.id, ["kill", "-9", "-1"], user=f"{AGENT_UID}:{AGENT_UID}"
        )["Id"]
        api.exec_start(exec_id)

    def close(self) -> None:
        import docker.errors

        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)


def _send_stdin(raw: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        raw.sendall(data)
    with contextlib.suppress(OSError):
        raw.shutdown(socket.SHUT_WR)


class DockerBackend:
    """Sandboxes as Docker containers from locally built images."""

    name = "docker"

    def __init__(
        self,
        base: BaseImageSpec | None = None,
        *,
        client: docker.DockerClient | None = None,
        watchdog: bool = True,
    ) -> None:
        self._base = base or BaseImageSpec()
        #: Start the owner-death watchdog (`swe_sandbox._watchdog`) with the first sandbox.
        self.watchdog = watchdog
        self._client = client
        self._base_tag: str | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def check(self) -> None:
        """Raise `BackendUnavailableError` unless a Docker engine answers (connect and ping)."""
        import docker.errors

        try:
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise BackendUnavailableError(f"no Docker engine: {exc}") from exc

    def base_image(self) -> str:
        with self._lock:
            if self._base_tag is None:
                self._base_tag = ensure_base_image(self._base, client=self.client)
            return self._base_tag

    def start(
        self,
        sandbox_id: str,
        limits: Limits,
        *,
        image: str | None = None,
        masked: tuple[str, ...] = (),
    ) -> DockerSession:
        import docker.errors

        tmpfs_opts = "nosuid,nodev,exec"
        info = inspect_image(self.client, image) if image is not None else None
        env = sandbox_env(info)
        hidden = dict.fromkeys(
            masked_paths(info, masked), "size=64k,mode=0755,ro,nosuid,nodev,noexec"
        )
        owner, runtime = owner_token(), str(runtime_root())
        if self.watchdog:
            ensure_watchdog(owner, runtime, _host_id())
        try:
            container = self.client.containers.run(
                info.image_id if info is not None else self.base_image(),
                command=["sleep", "infinity"],
                detach=True,
                init=True,
                name=f"swe-sandbox-{sandbox_id}",
                hostname="sandbox",
                # The keep-alive runs as (capability-less) root so that the agent's
                # `kill -9 -1` cannot stop the container; every exec names its user.
                user="0:0",
                working_dir=WORKDIR,
                environment=env,
                network_mode="none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                ipc_mode="private",
                tmpfs={
                    WORKDIR: f"size={limits.disk_bytes},uid={AGENT_UID},gid={AGENT_UID},"
                    f"mode=0755,{tmpfs_opts}",
                    "/tmp": f"size={limits.tmp_bytes},mode=1777,{tmpfs_opts}",
                    GRADER_DIR: f"size={64 << 20},mode=0755,{tmpfs_opts}",
                    "/dev/shm": f"size={limits.tmp_bytes},mode=1777,nosuid,nodev,noexec",
                    **hidden,
                },
                mem_limit=limits.memory_bytes,
                memswap_limit=limits.memory_bytes,
                pids_limit=limits.pids,
                nano_cpus=int(limits.cpus * 1e9),
                ulimits=[docker.types.Ulimit(name="nofile", soft=4096, hard=4096)],
                labels={
                    LABEL: "1",
                    OWNER_LABEL: owner,
                    HOST_LABEL: _host_id(),
                    RUNTIME_LABEL: runtime,
                },
            )
        except docker.errors.ImageNotFound as exc:
            raise ImageNotFoundError(
                f"image {image} not found locally (nothing is pulled)"
            ) from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot start sandbox {sandbox_id}: {exc}") from exc
        return DockerSession(self.client, container, sandbox_id, env)

    def reap_orphans(self) -> int:
        """The janitor: remove containers of dead owners started under this caller's runtime
        root on this host (label-scoped; `SandboxPool` runs it at start-up)."""
        import docker.errors

        reaped = 0
        scope = {"label": [f"{LABEL}=1", f"{RUNTIME_LABEL}={runtime_root()}"]}
        for container in self.client.containers.list(all=True, filters=scope):
            labels = container.labels
            if labels.get(HOST_LABEL) != _host_id() or owner_alive(labels.get(OWNER_LABEL, "")):
                continue
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
                reaped += 1
        return reaped


def has_task_repo(client: docker.DockerClient, image: str) -> bool:
    """Whether `image` is a per-task layer (it carries the prepared repo)."""
    try:
        labels = client.images.get(image).labels or {}
    except Exception:
        return False
    return "swe-sandbox.task" in labels


__all__ = ["TASK_REPO_PATH", "DockerBackend", "DockerSession", "has_task_repo"]
