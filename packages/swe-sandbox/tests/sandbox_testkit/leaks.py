"""Host-side probes: is anything of a sandbox left (processes, containers, dirs, cgroups)?"""

from __future__ import annotations

import contextlib
from pathlib import Path

from swe_sandbox import Backend, DockerBackend
from swe_sandbox._cgroups import cgroup_dirs
from swe_sandbox._namespace import owner_token, runtime_root


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (sandboxed processes are visible here)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if marker.encode() in (proc / "cmdline").read_bytes().replace(b"\0", b" "):
                found.append(int(proc.name))
    return found


def leftovers(backend: Backend, sandbox_id: str) -> list[str]:
    """Everything of `sandbox_id` still present on the host."""
    left = []
    if isinstance(backend, DockerBackend):
        import docker.errors

        with contextlib.suppress(docker.errors.NotFound):
            backend.client.containers.get(f"swe-sandbox-{sandbox_id}")
            left.append("container")
    else:
        if (runtime_root() / sandbox_id).exists():
            left.append("runtime dir")
        left += [str(path) for path in cgroup_dirs(sandbox_id) if path.exists()]
    return left


def live_sandbox_ids(backend: Backend) -> set[str]:
    """Ids of the sandboxes of this backend that *this process* owns and that still exist.

    Other processes on the machine (a colleague's test run) may own sandboxes meanwhile; they
    are not ours to count.
    """
    me = owner_token()
    if isinstance(backend, DockerBackend):
        containers = backend.client.containers.list(
            all=True, filters={"label": f"swe-sandbox.owner={me}"}
        )
        return {c.name.removeprefix("swe-sandbox-") for c in containers}
    root = runtime_root()
    found = set()
    for box in root.iterdir() if root.is_dir() else []:
        with contextlib.suppress(OSError):
            if (box / "owner").read_text() == me:
                found.add(box.name)
    return found
