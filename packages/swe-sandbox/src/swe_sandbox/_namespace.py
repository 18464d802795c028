"""The daemon-less namespace backend (util-linux ``unshare`` / ``nsenter`` / ``mount``, root).

Each sandbox is one long-lived init process in fresh mount, PID, network, IPC and UTS
namespaces, chrooted into a read-only bind of the base rootfs, with

* ``/work``  — a size-capped tmpfs (the disk limit) owned by the agent uid,
* ``/grader`` — a small root-owned tmpfs, empty until grading,
* ``/tmp``, ``/dev/shm`` — size-capped tmpfs; ``/dev`` holds only null/zero/full/(u)random,
* ``/proc`` of the sandbox's own PID namespace; no ``/sys``; only ``lo`` in its network.

The init is a small command server (``_nsexec``): it already sits in every namespace, the
chroot and the cgroup, so each command is one ``fork`` + ``exec bash -c`` by the init, which
drops the agent's commands to uid/gid 1000 with no supplementary groups (hence no
capabilities); every mount is ``nosuid``, so no setuid binary or file capability can raise them
again. A per-sandbox cgroup caps pids, memory and CPU. The init's stdin is a pipe whose only
writer is the owner process, and its control socket's other end is the owner's too (the init
also reaps adopted zombies): when the owner exits — even by SIGKILL — they close, init exits,
and the kernel kills every process in the PID namespace.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from swe_sandbox import _cgroups
from swe_sandbox._backend import BASE_ENV, User
from swe_sandbox._environment import (
    exported_rootfs,
    init_python,
    inspect_image,
    masked_paths,
    sandbox_env,
)
from swe_sandbox._errors import BackendUnavailableError, SandboxClosedError, SandboxError
from swe_sandbox._limits import Limits
from swe_sandbox._nsexec import MAX_REQUEST_BYTES, SERVER_SOURCE, control_pair, run_via_init
from swe_sandbox._prepare import AGENT_UID
from swe_sandbox._results import ExecResult
from swe_sandbox._rootfs import BaseImageSpec, build_rootfs, cache_root
from swe_sandbox._seccomp import INSTALL_SOURCE, KEYCTL_X86_64, filter_program


def runtime_root() -> Path:
    """``$SWE_SANDBOX_RUNTIME`` or ``/tmp/swe-sandbox-ns``: one directory per live sandbox."""
    return Path(os.environ.get("SWE_SANDBOX_RUNTIME", "/tmp/swe-sandbox-ns"))


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token() -> str:
    """This process as ``pid:starttime`` (robust to pid reuse)."""
    return f"{os.getpid()}:{_start_time(os.getpid())}"


def owner_alive(token: str) -> bool:
    pid, _, start = token.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == start


_SETUP = r"""
set -eu
R="$1"; ROOTFS="$2"; BOX="$3"; TMP_BYTES="$4"; CTL_FD="$5"; AGENT="$6"; BUF="$7"; SERVER="$8"
FILTER="$9"; KEYCTL="${10}"; INSTALL="${11}"; MASK="${12}"; PY="${13}"
read -r HOSTPID _ < /proc/self/stat
mount --bind "$ROOTFS" "$R"
mount -o remount,bind,ro,nosuid,nodev "$R"
for p in $MASK; do
  mount -t tmpfs -o size=64k,mode=755,ro,nosuid,nodev,noexec tmpfs "$R$p"
done
mount --bind "$BOX/work" "$R/work"
mount --bind "$BOX/grader" "$R/grader"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount -t tmpfs -o "size=$TMP_BYTES,mode=1777,nosuid,nodev" tmpfs "$R/tmp"
mount -t tmpfs -o size=1m,mode=755,nosuid tmpfs "$R/dev"
for d in null zero full random urandom; do
  : > "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"
done
mkdir "$R/dev/shm" "$R/dev/pts"
mount -t tmpfs -o "size=$TMP_BYTES,mode=1777,nosuid,nodev" tmpfs "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
ip link set lo up
mount -o remount,bind,ro,nosuid,nodev,noexec "$R/dev" 2>/dev/null || true
cd "$R"
# The command server says "ready" only once chrooted and in /work.
exec chroot . "$PY" -I -S -c "$SERVER" "$CTL_FD" "$HOSTPID" "$AGENT" "$BUF" \
  "$FILTER" "$KEYCTL" "$INSTALL"
"""


class NamespaceSession:
    """One namespace sandbox (see the module docstring)."""

    def __init__(
        self,
        sandbox_id: str,
        box: Path,
        init: subprocess.Popen[bytes],
        init_pid: int,
        keepalive_fd: int,
        control: socket.socket,
        cgroups: list[Path],
        env: dict[str, str] | None = None,
    ) -> None:
        self._env = dict(env or BASE_ENV)
        self._id = sandbox_id
        self._box = box
        self._init = init
        self._init_pid = init_pid
        self._keepalive_fd: int | None = keepalive_fd
        self._control = control
        self._cgroups = cgroups

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
        if self._keepalive_fd is None or self._init.poll() is not None:
            raise SandboxClosedError(f"sandbox {self._id} is closed")
        # One fork + exec by the init (``_nsexec``). On timeout: the process group dies first,
        # then whatever escaped it (setsid, forks racing the kill) — every process in the
        # sandbox's cgroup but the init.
        return run_via_init(
            self._control,
            command,
            user=user,
            env={**self._env, **(env or {})},  # replaces the host environment entirely
            timeout=timeout,
            output_limit=output_limit,
            stdin=stdin,
            on_timeout=self.kill_agent_processes,
        )

    def kill_agent_processes(self) -> None:
        # Everything but init lives at the agent's mercy; init (pid 1) keeps the namespaces.
        _cgroups.kill_members(self._id, spare={self._init_pid, self._init.pid})

    def close(self) -> None:
        if self._keepalive_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._keepalive_fd)
            self._keepalive_fd = None
        self._control.close()
        with contextlib.suppress(ProcessLookupError):
            self._init.kill()
        self._init.wait()
        _teardown(self._id, self._box)


def _teardown(sandbox_id: str, box: Path) -> None:
    _cgroups.remove(sandbox_id)
    for mount_point in ("work", "grader"):
        target = box / mount_point
        if os.path.ismount(target):
            subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)
    shutil.rmtree(box, ignore_errors=True)


class NamespaceBackend:
    """Sandboxes from Linux namespaces; needs root (CAP_SYS_ADMIN) and util-linux."""

    name = "namespace"

    def __init__(
        self, base: BaseImageSpec | None = None, *, rootfs: Path | None = None, seccomp: bool = True
    ) -> None:
        self._base = base or BaseImageSpec()
        self._rootfs = rootfs
        #: Install the seccomp filter and a private keyring in every sandbox (x86-64 only;
        #: elsewhere `filter_program` is ``None`` and sandboxes run without it).
        self.seccomp = seccomp
        self._exported: dict[str, Path] = {}
        self._client: Any = None  # a docker client, made on the first image-backed sandbox
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise `BackendUnavailableError` unless this process is root with util-linux."""
        if os.geteuid() != 0:
            raise BackendUnavailableError("the namespace backend needs root (mount namespaces)")
        for tool in ("unshare", "mount", "ip"):
            if shutil.which(tool) is None:
                raise BackendUnavailableError(f"the namespace backend needs {tool!r} on PATH")

    @property
    def rootfs(self) -> Path:
        if self._rootfs is None:
            self._rootfs = build_rootfs(self._base)
        return self._rootfs

    def environment(
        self, image: str | None, masked: tuple[str, ...] = ()
    ) -> tuple[Path, dict[str, str], tuple[str, ...]]:
        """Root filesystem, base environment and masked directories for sandboxes on `image`
        (``None``: the base rootfs). An image's rootfs is exported once and cached by id."""
        if image is None:
            return self.rootfs, dict(BASE_ENV), ()
        from swe_sandbox._docker_image import docker_client

        if self._client is None:
            self._client = docker_client()
        info = inspect_image(self._client, image)
        with self._lock:
            rootfs = self._exported.get(info.image_id)
        if rootfs is None:
            rootfs = exported_rootfs(self._client, info, cache_root() / "rootfs")
            with self._lock:
                self._exported[info.image_id] = rootfs
        hidden = tuple(p for p in masked_paths(info, masked) if _plain_dir(rootfs, p))
        return rootfs, sandbox_env(info), hidden

    def start(
        self,
        sandbox_id: str,
        limits: Limits,
        *,
        image: str | None = None,
        masked: tuple[str, ...] = (),
    ) -> NamespaceSession:
        self.check()
        rootfs, env, hidden = self.environment(image, masked)
        box = runtime_root() / sandbox_id
        box.mkdir(parents=True)
        try:
            return self._start(sandbox_id, box, limits, rootfs, env, hidden)
        except BaseException:
            _teardown(sandbox_id, box)
            raise

    def _start(
        self,
        sandbox_id: str,
        box: Path,
        limits: Limits,
        rootfs: Path,
        env: dict[str, str],
        hidden: tuple[str, ...],
    ) -> NamespaceSession:
        # Atomic: a concurrent janitor (another process) sees no owner or the whole token.
        (box / ".owner.tmp").write_text(owner_token())
        os.replace(box / ".owner.tmp", box / "owner")
        for name, size, uid in (("work", limits.disk_bytes, AGENT_UID), ("grader", 64 << 20, 0)):
            (box / name).mkdir()
            opts = f"size={size},mode=0755,uid={uid},gid={uid},nosuid,nodev"
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(box / name)],
                check=True,
                capture_output=True,
            )
        (box / "root").mkdir()
        cgroups = _cgroups.create(sandbox_id, limits)
        joins = " ".join(shlex.quote(str(c / "cgroup.procs")) for c in cgroups)
        program = filter_program() if self.seccomp else None
        read_end, keepalive = os.pipe()
        control, init_end = control_pair()
        try:
            init = subprocess.Popen(
                [
                    "/bin/sh",
                    "-c",
                    f'for f in {joins}; do echo $$ > "$f"; done; exec "$@"',
                    "sh",
                    "unshare",
                    "--mount",
                    "--pid",
                    "--net",
                    "--ipc",
                    "--uts",
                    "--fork",
                    "--kill-child",
                    "--propagation",
                    "private",
                    "--",
                    "/bin/sh",
                    "-c",
                    _SETUP,
                    "setup",
                    str(box / "root"),
                    str(rootfs),
                    str(box),
                    str(limits.tmp_bytes),
                    str(init_end.fileno()),
                    str(AGENT_UID),
                    str(MAX_REQUEST_BYTES),
                    SERVER_SOURCE,
                    program.hex() if program else "",
                    str(KEYCTL_X86_64),
                    INSTALL_SOURCE,
                    " ".join(hidden),
                    init_python(rootfs),
                ],
                stdin=read_end,
                pass_fds=(init_end.fileno(),),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            control.close()
            raise
        finally:
            os.close(read_end)
            init_end.close()
        assert init.stdout is not None
        line = init.stdout.readline().decode().split()
        if len(line) != 2 or line[0] != "ready":
            os.close(keepalive)
            control.close()
            init.wait(timeout=10)
            error = init.stderr.read().decode() if init.stderr else ""
            raise SandboxError(f"namespace sandbox {sandbox_id} failed to start: {error.strip()}")
        (box / "init.pid").write_text(line[1])
        return NamespaceSession(
            sandbox_id, box, init, int(line[1]), keepalive, control, cgroups, env
        )

    def reap_orphans(self) -> int:
        """Tear down sandboxes whose owner process is gone (crash, SIGKILL)."""
        reaped = 0
        root = runtime_root()
        boxes = {p.name: p for p in root.iterdir()} if root.is_dir() else {}
        for sandbox_id in set(boxes) | _cgroups.existing_ids():
            box = boxes.get(sandbox_id, root / sandbox_id)
            try:
                token: str | None = (box / "owner").read_text()
            except OSError:
                token = None
            if token and owner_alive(token):
                continue
            if not token and time.time() - _mtime(box) < 30:
                continue  # being created right now by a live process: no owner written yet
            _teardown(sandbox_id, box)
            reaped += 1
        return reaped


def _plain_dir(rootfs: Path, path: str) -> bool:
    """Whether `path` is a directory of `rootfs` reached without any symlink (a mount point
    that is safe to cover) and free of whitespace (it crosses the setup script as a word)."""
    if any(c.isspace() for c in path):
        return False
    current = rootfs
    for part in path.strip("/").split("/"):
        current = current / part
        if current.is_symlink() or not current.is_dir():
            return False
    return True


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
