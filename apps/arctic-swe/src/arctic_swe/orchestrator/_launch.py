"""Engine server processes the run starts itself (``engine.launch = N``).

Each server is ``arctic-swe serve`` on 127.0.0.1 with a free port (``--port 0``); it prints one
JSON line with its URL on stdout when it is listening. The fleet starts all of them at once,
reads those lines under a deadline, and on exit (normal, error, Ctrl-C or cancellation)
terminates every process it started — SIGTERM, then SIGKILL after a grace period — so no server
outlives the run. On Linux each child also gets ``PR_SET_PDEATHSIG``: if this process is killed
outright, the kernel sends the servers SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arctic_swe._process import die_with_parent, ready_url

#: Runs the app's CLI in a child interpreter (the same venv as this process).
_CLI = "import sys; from arctic_swe._cli import main; sys.exit(main(sys.argv[1:]))"


class LaunchError(RuntimeError):
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
    return [
        sys.executable,
        "-c",
        _CLI,
        "serve",
        "--model",
        str(spec.model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--capacity",
        str(spec.capacity),
        "--threads",
        str(spec.threads),
        "--engine-id",
        engine_id,
        "--mamba-ssm-cache-dtype",
        spec.state_dtype,
    ]


@dataclass
class _Server:
    engine_id: str
    process: asyncio.subprocess.Process
    url: str = ""
    drain: asyncio.Task[None] | None = None  # discards stdout after the URL (never blocks it)


class ServerFleet:
    """Starts ``arctic-swe serve`` processes and guarantees they stop.

    Use as ``async with ServerFleet(spec, ids, log_dir, timeout) as fleet: fleet.urls``. Each
    server's stderr goes to ``log_dir/<engine id>.log`` (kept for post-mortems).
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
        self.grace = grace
        self.servers: list[_Server] = []

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
        """Spawn every server, then wait (all at once) for each one's URL line."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for engine_id in self.engine_ids:
            with (self.log_dir / f"{engine_id}.log").open("ab") as log:
                process = await asyncio.create_subprocess_exec(
                    *serve_command(self.spec, engine_id),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                    preexec_fn=die_with_parent if sys.platform == "linux" else None,
                )
            self.servers.append(_Server(engine_id, process))
        await asyncio.gather(*(self._await_url(server) for server in self.servers))

    async def _await_url(self, server: _Server) -> None:
        assert server.process.stdout is not None
        log = self.log_dir / f"{server.engine_id}.log"
        try:
            async with asyncio.timeout(self.startup_timeout):
                while True:
                    line = await server.process.stdout.readline()
                    if not line:
                        code = await server.process.wait()
                        raise LaunchError(
                            f"engine server {server.engine_id} exited with code {code} before "
                            f"it was ready; see {log}"
                        )
                    url = ready_url(line)
                    if url is not None:
                        server.url = url
                        server.drain = asyncio.ensure_future(_discard(server.process.stdout))
                        return
        except TimeoutError:
            raise LaunchError(
                f"engine server {server.engine_id} printed no URL within "
                f"{self.startup_timeout:g} s; see {log}"
            ) from None

    async def stop(self) -> None:
        """Terminate every server this fleet started; idempotent, never raises."""
        await asyncio.gather(*(self._stop_one(s) for s in self.servers), return_exceptions=True)

    async def _stop_one(self, server: _Server) -> None:
        process = server.process
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), self.grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if server.drain is not None:
            server.drain.cancel()
            await asyncio.gather(server.drain, return_exceptions=True)


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass
