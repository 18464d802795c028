"""The cluster's children on the app's supervisor, marked so that none is left behind.

Every child runs in its own session and process group, with ``PR_SET_PDEATHSIG`` and its log
under ``RUN/logs/`` (:class:`arctic_swe._process.Supervisor`), and with
``ARCTIC_SWE_CLUSTER=<run dir>`` in its environment. Stopping goes loop first (it
checkpoints), then everything else; then a sweep of ``/proc`` kills any process still carrying
the marker — torchrun starts its ranks in sessions of their own, so a rank can only outlive a
killed torchrun this way.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import replace
from pathlib import Path

from arctic_swe._process import Child, ChildFailedError, ProcessSpec, Supervisor
from arctic_swe.cluster._envs import resolve_argv

__all__ = ["MARKER", "Child", "ChildFailedError", "ClusterSupervisor", "marked_pids", "sweep"]

#: Environment variable every child carries: the run directory (the orphan sweep's key).
MARKER = "ARCTIC_SWE_CLUSTER"


class ClusterSupervisor(Supervisor):
    """The supervisor of one cluster run: logs in ``RUN/logs/``, the marker in every child's
    environment, the loop stopped first and a sweep for leftovers (``async with``)."""

    def __init__(self, run_dir: Path, *, grace: float = 10.0) -> None:
        self.run_dir = run_dir
        self.token = str(run_dir.resolve())
        self.swept: list[int] = []
        super().__init__(run_dir / "logs", grace=grace, env={MARKER: self.token})

    async def spawn(self, spec: ProcessSpec) -> Child:
        """Start ``spec`` with its argv resolved to the launcher's environment (a planned
        command already is: resolving again changes nothing)."""
        return await super().spawn(replace(spec, argv=tuple(resolve_argv(spec.argv))))

    async def stop_all(self) -> None:
        """Stop the loop first (it checkpoints), then everything else; sweep leftovers
        (:attr:`swept`: the pids the sweep had to kill, empty when every group went cleanly)."""
        loops = [c for c in self.children if c.spec.role == "loop"]
        await self.stop(loops, max(self.grace, 30.0))
        await self.stop([c for c in self.children if c.spec.role != "loop"])
        self.swept = sweep(self.token)
        await self.finish_pumps()


def marked_pids(token: str) -> list[int]:
    """Live processes whose environment carries ``ARCTIC_SWE_CLUSTER=token``."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def sweep(token: str) -> list[int]:
    """SIGKILL every process still carrying the marker; the pids it killed."""
    killed = []
    for pid in marked_pids(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed
