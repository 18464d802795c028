"""Per-sandbox cgroups (v1 or v2) for the namespace backend: pids, memory and CPU limits."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from swe_sandbox._limits import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_NAME = "swe-sandbox"


def _is_v2() -> bool:
    return (CGROUP_ROOT / "cgroup.controllers").exists()


def cgroup_dirs(sandbox_id: str) -> list[Path]:
    """The directories that hold the sandbox's processes (one per v1 controller, or one v2)."""
    if _is_v2():
        return [CGROUP_ROOT / GROUP_NAME / sandbox_id]
    return [CGROUP_ROOT / ctrl / GROUP_NAME / sandbox_id for ctrl in ("pids", "memory", "cpu")]


def create(sandbox_id: str, limits: Limits) -> list[Path]:
    """Create the sandbox's cgroups and write its limits; returns the dirs to join."""
    dirs = cgroup_dirs(sandbox_id)
    quota = int(limits.cpus * 100_000)
    for path in dirs:
        path.mkdir(parents=True, exist_ok=True)
    if _is_v2():
        parent = dirs[0].parent
        with contextlib.suppress(OSError):
            (parent / "cgroup.subtree_control").write_text("+pids +memory +cpu")
        (dirs[0] / "pids.max").write_text(str(limits.pids))
        (dirs[0] / "memory.max").write_text(str(limits.memory_bytes))
        with contextlib.suppress(OSError):
            (dirs[0] / "memory.swap.max").write_text("0")
        (dirs[0] / "cpu.max").write_text(f"{quota} 100000")
        return dirs
    pids, memory, cpu = dirs
    (pids / "pids.max").write_text(str(limits.pids))
    (memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
    with contextlib.suppress(OSError):  # absent without swap accounting
        (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
    (cpu / "cpu.cfs_period_us").write_text("100000")
    (cpu / "cpu.cfs_quota_us").write_text(str(quota))
    return dirs


def member_pids(sandbox_id: str) -> set[int]:
    found: set[int] = set()
    for path in cgroup_dirs(sandbox_id):
        with contextlib.suppress(OSError):
            found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
    return found


def kill_members(sandbox_id: str, *, spare: set[int] | frozenset[int] = frozenset()) -> None:
    """SIGKILL every process in the sandbox's cgroups except `spare`, until none is left."""
    for _ in range(50):
        victims = member_pids(sandbox_id) - set(spare)
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def remove(sandbox_id: str) -> None:
    """Kill what is left and remove the sandbox's cgroup directories."""
    kill_members(sandbox_id)
    for path in cgroup_dirs(sandbox_id):
        for _ in range(50):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # busy: processes still exiting
                time.sleep(0.02)


def existing_ids() -> set[str]:
    """Sandbox ids that still have a cgroup (for the janitor)."""
    found: set[str] = set()
    for path in cgroup_dirs("x"):
        with contextlib.suppress(OSError):
            found |= {p.name for p in path.parent.iterdir() if p.is_dir()}
    return found
