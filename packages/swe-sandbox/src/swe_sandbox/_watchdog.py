"""The Docker backend's owner-death watchdog: containers die with the process that owns them.

The owner starts one watchdog per process (`ensure_watchdog`) and keeps the write end of a pipe
whose read end is the watchdog's stdin. When the owner exits — even by SIGKILL — the kernel
closes the pipe; the watchdog wakes up, removes every container labelled with that owner *and*
the owner's runtime root (nothing else: other owners and other runtime roots are not its
business), and exits. ``python -m swe_sandbox._watchdog OWNER RUNTIME HOST``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

_started: dict[int, int] = {}  # owner pid -> write end of its watchdog pipe
_lock = threading.Lock()


def ensure_watchdog(owner: str, runtime: str, host: str) -> None:
    """Start this process's watchdog once (again after a fork: the child is a new owner)."""
    with _lock:
        if os.getpid() in _started:
            return
        read_end, write_end = os.pipe()  # both close-on-exec: only the watchdog gets read_end
        try:
            subprocess.Popen(
                [sys.executable, "-m", "swe_sandbox._watchdog", owner, runtime, host],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # survives a signal to the owner's process group
            )
        finally:
            os.close(read_end)
        _started[os.getpid()] = write_end


def reap_owner(owner: str, runtime: str, host: str) -> int:
    """Remove every container of `owner` under `runtime` on `host`; how many were removed."""
    import docker
    import docker.errors

    from swe_sandbox._docker_backend import HOST_LABEL, LABEL, OWNER_LABEL, RUNTIME_LABEL

    client = docker.from_env(timeout=120)
    filters = {"label": [f"{LABEL}=1", f"{OWNER_LABEL}={owner}", f"{RUNTIME_LABEL}={runtime}"]}
    removed = 0
    for container in client.containers.list(all=True, filters=filters):
        if container.labels.get(HOST_LABEL) != host:
            continue
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            container.remove(force=True, v=True)
            removed += 1
    return removed


def main(argv: list[str]) -> int:
    owner, runtime, host = argv
    while sys.stdin.buffer.read(1 << 16):  # returns b"" only once every writer is gone
        pass
    with contextlib.suppress(Exception):  # best effort: the janitor at the next start remains
        reap_owner(owner, runtime, host)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
