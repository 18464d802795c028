"""Child processes of the cluster: start, wait for ready, watch, stop — and leave none behind.

Every child runs in its own session and process group (``start_new_session``), with
``PR_SET_PDEATHSIG`` so the kernel sends it SIGTERM if the launcher dies outright, and with
``ARCTIC_SWE_CLUSTER=<run dir>`` in its environment. Its stderr goes to ``RUN/logs/<name>.log``
and so does its stdout, line by line, after the launcher has looked for the ready line
(``{"event": "ready", "url": …}``, the shape ``arctic-swe serve`` and the trainer print).

Stopping is group-wide: SIGTERM to the child's process group, SIGKILL after a grace period,
then a sweep of ``/proc`` for any process still carrying the marker — torchrun starts its ranks
in sessions of their own, so a rank can only outlive a killed torchrun this way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arctic_swe._process import die_with_parent, ready_url
from arctic_swe.cluster._plan import READY_HEALTH, READY_LINE, ProcessSpec, resolve_argv

#: Environment variable every child carries: the run directory (the orphan sweep's key).
MARKER = "ARCTIC_SWE_CLUSTER"


class ChildFailedError(RuntimeError):
    """A child exited, or never became ready; ``child`` names it (role, log)."""

    def __init__(self, child: Child, message: str) -> None:
        super().__init__(message)
        self.child = child


@dataclass
class Child:
    """One started process: its spec, the asyncio process, its log and (once ready) URL."""

    spec: ProcessSpec
    process: asyncio.subprocess.Process
    log: Path
    url: str = ""
    ready_line: asyncio.Future[str] = field(default_factory=asyncio.Future)
    pump: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    def describe_exit(self) -> str:
        """``"<name> exited with code N; see LOG"`` (or ``was killed by SIGKILL``) plus the
        log's last line, if any."""
        code = self.process.returncode
        if code is not None and code < 0:
            what = f"was killed by {signal.Signals(-code).name}"
        else:
            what = f"exited with code {code}"
        last = _last_line(self.log)
        tail = f" (last log line: {last})" if last else ""
        return f"{self.name} {what}; see {self.log}{tail}"


class Supervisor:
    """Starts children under one marker and stops them all (``async with``)."""

    def __init__(self, run_dir: Path, *, grace: float = 10.0) -> None:
        self.run_dir = run_dir
        self.token = str(run_dir.resolve())
        self.grace = grace
        self.children: list[Child] = []

    async def __aenter__(self) -> Supervisor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_all()

    async def spawn(self, spec: ProcessSpec) -> Child:
        """Start ``spec`` (in this thread: the death signal follows the forking thread)."""
        log = self.run_dir / "logs" / f"{spec.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **dict(spec.env), MARKER: self.token}
        with log.open("ab") as stderr:
            process = await asyncio.create_subprocess_exec(
                *resolve_argv(spec.argv),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        child = Child(spec, process, log, url=spec.url)
        child.pump = asyncio.ensure_future(_pump(child))
        self.children.append(child)
        return child

    async def wait_ready(self, child: Child, timeout: float) -> str:
        """The child's URL once it is ready (ready line and/or ``/health``), or
        :class:`ChildFailedError` if it exits or stays silent for ``timeout`` seconds."""
        exited = asyncio.ensure_future(child.process.wait())
        try:
            async with asyncio.timeout(timeout):
                if child.spec.ready == READY_LINE:
                    await _first(child.ready_line, exited)
                    if child.ready_line.done():
                        child.url = child.ready_line.result()
                if child.spec.ready in (READY_LINE, READY_HEALTH) and child.alive:
                    health = asyncio.ensure_future(_healthy(child.url))
                    try:
                        await _first(health, exited)
                    finally:
                        health.cancel()
        except TimeoutError:
            raise ChildFailedError(
                child, f"{child.name} was not ready within {timeout:g} s; see {child.log}"
            ) from None
        finally:
            exited.cancel()
        if not child.alive:
            raise ChildFailedError(child, child.describe_exit() + " before it was ready")
        return child.url

    async def first_exit(self, children: Iterable[Child]) -> Child:
        """Wait until one of ``children`` exits; return it."""
        waits = {asyncio.ensure_future(c.process.wait()): c for c in children}
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
        return waits[next(iter(done))]

    async def stop(self, children: Iterable[Child], grace: float | None = None) -> None:
        """SIGTERM each child's process group, SIGKILL after ``grace`` seconds."""
        await asyncio.gather(*(self._stop_one(c, grace or self.grace) for c in children))

    async def stop_all(self) -> list[int]:
        """Stop the loop first (it checkpoints), then everything else; sweep leftovers.
        Returns the pids the sweep had to kill (empty when every group went cleanly)."""
        loops = [c for c in self.children if c.spec.role == "loop"]
        await self.stop(loops, max(self.grace, 30.0))
        await self.stop([c for c in self.children if c.spec.role != "loop"])
        swept = sweep(self.token)
        pumps = [c.pump for c in self.children if c.pump is not None]
        if pumps:  # a pipe held open by a process without the marker must not hang the exit
            _, pending = await asyncio.wait(pumps, timeout=5.0)
            for pump in pending:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
        return swept

    async def _stop_one(self, child: Child, grace: float) -> None:
        pgid = child.process.pid  # the session leader's pid is its group id
        if child.alive:
            _signal_group(pgid, signal.SIGTERM)
            try:
                await asyncio.wait_for(child.process.wait(), grace)
            except TimeoutError:
                _signal_group(pgid, signal.SIGKILL)
                await child.process.wait()
        _signal_group(pgid, signal.SIGKILL)  # anything the leader left in its group


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


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


async def _first(wanted: asyncio.Future[Any], exited: asyncio.Future[int]) -> None:
    """Wait for ``wanted`` or the child's exit, whichever comes first."""
    await asyncio.wait({wanted, exited}, return_when=asyncio.FIRST_COMPLETED)


async def _healthy(url: str, interval: float = 0.5) -> None:
    """Poll ``url/health`` until it answers 200."""
    import httpx

    async with httpx.AsyncClient(timeout=5.0) as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url.rstrip("/") + "/health")).status_code == 200:
                    return
            await asyncio.sleep(interval)


async def _pump(child: Child) -> None:
    """Copy the child's stdout into its log, resolving ``ready_line`` on the first ready line."""
    stream = child.process.stdout
    assert stream is not None
    with child.log.open("ab") as log:
        while line := await stream.readline():
            if not child.ready_line.done() and (url := ready_url(line)) is not None:
                child.ready_line.set_result(url)
            log.write(line)
            log.flush()


def _last_line(log: Path, limit: int = 200) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 8192))
            lines = [ln.strip() for ln in handle.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:limit] if lines else ""
