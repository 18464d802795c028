"""Engine server processes the run starts itself (``engine.launch = N``).

Each server is ``arctic-swe serve`` on 127.0.0.1 with a free port (``--port 0``); it prints one
JSON line with its URL on stdout when it is listening. The fleet starts all of them at once on
the app's supervisor (:class:`arctic_swe._process.Supervisor`), waits for those lines under a
deadline, and on exit (normal, error, Ctrl-C or cancellation) terminates every process it
started — SIGTERM, then SIGKILL after a grace period — so no server outlives the run. Each
child also gets ``PR_SET_PDEATHSIG``: if this process is killed outright, the kernel sends the
servers SIGTERM. The servers stay in this process's session (a Ctrl-C reaches them too).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arctic_swe._process import READY_LINE, Child, ChildFailedError, ProcessSpec, Supervisor
from arctic_swe.serve import ServeArgs

#: Runs the app's CLI in a child interpreter (the same venv as this process).
_CLI = "import sys; from arctic_swe._cli import main; sys.exit(main(sys.argv[1:]))"


class LaunchError(ChildFailedError):
    """An engine server did not start (exited early, printed no URL, or timed out)."""


@dataclass(frozen=True)
class ServerSpec:
    """What to serve: the checkpoint directory, the engine's sizes and the storage dtype of
    its recurrent state (``"bfloat16"``: the "FP32 numerics off" ablation, as the trainer's
    ``fp32_numerics = false`` asks of in-process engines)."""

    model_dir: Path
    capacity: int
    threads: int = 1
    state_dtype: str = "float32"


def serve_command(spec: ServerSpec, engine_id: str) -> list[str]:
    """The argv of one ``arctic-swe serve`` child on 127.0.0.1 with a free port."""
    serve = ServeArgs(
        spec.model_dir, spec.capacity, spec.threads, engine_id, state_dtype=spec.state_dtype
    )
    return [sys.executable, "-c", _CLI, *serve.argv()]


class ServerFleet:
    """Starts ``arctic-swe serve`` processes and guarantees they stop.

    Use as ``async with ServerFleet(spec, ids, log_dir, timeout) as fleet: fleet.urls``. Each
    server's output goes to ``log_dir/<engine id>.log`` (kept for post-mortems).
    """

    def __init__(
        self,
        spec: ServerSpec,
        engine_ids: Sequence[str],
        log_dir: Path,
        *,
        startup_timeout: float,
        grace: float = 5.0,
    ) -> None:
        self.spec = spec
        self.engine_ids = tuple(engine_ids)
        self.log_dir = log_dir
        self.startup_timeout = startup_timeout
        self.supervisor = Supervisor(log_dir, grace=grace, new_session=False)

    @property
    def servers(self) -> list[Child]:
        """The servers started so far, in ``engine_ids`` order."""
        return self.supervisor.children

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(server.url for server in self.servers)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(server.process.pid for server in self.servers)

    async def __aenter__(self) -> ServerFleet:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Spawn every server, then wait (all at once) for each one's URL line;
        :class:`LaunchError` names the first that exits or stays silent, and its log."""
        for engine_id in self.engine_ids:
            argv = tuple(serve_command(self.spec, engine_id))
            await self.supervisor.spawn(ProcessSpec(engine_id, "engine", argv, ready=READY_LINE))
        try:
            await asyncio.gather(
                *(self.supervisor.wait_ready(s, self.startup_timeout) for s in self.servers)
            )
        except ChildFailedError as exc:
            raise LaunchError(exc.child, f"engine server {exc}") from exc

    async def stop(self) -> None:
        """Terminate every server this fleet started (idempotent)."""
        await self.supervisor.stop_all()
