"""The app's child processes: one supervisor for engine servers, trainers and loops.

:class:`Supervisor` starts each child with its argv, extra environment and log file
(``LOG_DIR/<name>.log``: stderr, then stdout line by line once the ready line has been looked
for), waits until it is ready (a JSON ready line on stdout and/or an answering ``/health``),
reports a child that exits first as :class:`ChildFailedError` with its exit code and the log's
last line, and stops children SIGTERM first, SIGKILL after a grace period. Every child gets
``PR_SET_PDEATHSIG`` (the kernel sends it SIGTERM if this process dies outright) and, with
``new_session`` (the default), a session and process group of its own, signalled as a whole.
The embedded fleet (``engine.launch = N``) and ``arctic-swe cluster up`` both run on it.

Standard library only (``httpx`` loads on the first ``/health`` poll): the launcher
(``arctic-swe cluster``) uses it without loading torch.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import shlex
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

_PR_SET_PDEATHSIG = 1

#: How a child says it is ready: a JSON ready line on stdout, an answering ``/health``, or
#: nothing (a child that runs to completion, as the cluster's loop).
READY_LINE, READY_HEALTH, READY_NONE = "line", "health", "none"


def die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """``preexec_fn`` of a child: the kernel sends it SIGTERM when the thread that forked it
    dies (Linux ``PR_SET_PDEATHSIG``; a no-op where there is no such call)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def ready_url(line: bytes) -> str | None:
    """The ``url`` of a ready line (one JSON object with an http ``url``: what
    ``arctic-swe serve`` and the distributed trainer print when listening), else ``None``."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url.startswith("http") else None


@dataclass(frozen=True)
class ProcessSpec:
    """One child process: ``name`` (its log is ``<log dir>/<name>.log``), its ``role`` (what
    the caller stops first or reports: engine | trainer | loop), ``argv`` exactly as run, extra
    environment, how it signals readiness (``READY_*``), its URL when known in advance (a
    fixed port; else read from the ready line) and the interpreter ``argv`` runs under
    (``""``: the launcher's own)."""

    name: str
    role: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    ready: str = READY_NONE
    url: str = ""
    python: str = ""

    def shell_line(self) -> str:
        """The command as one copy-pasteable shell line, environment first."""
        env = [f"{key}={shlex.quote(value)}" for key, value in self.env]
        return " ".join([*env, shlex.join(self.argv)])


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
        last = last_line(self.log)
        tail = f" (last log line: {last})" if last else ""
        return f"{self.name} {what}; see {self.log}{tail}"


class Supervisor:
    """Starts children and stops every one of them (``async with``).

    ``env`` is added to every child's environment (on top of this process's and the spec's);
    ``new_session`` puts each child in a session of its own and signals its whole process
    group, so that what it started goes with it.
    """

    def __init__(
        self,
        log_dir: Path,
        *,
        grace: float = 10.0,
        env: Mapping[str, str] | None = None,
        new_session: bool = True,
    ) -> None:
        self.log_dir = log_dir
        self.grace = grace
        self.env = dict(env or {})
        self.new_session = new_session
        self.children: list[Child] = []

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_all()

    async def spawn(self, spec: ProcessSpec) -> Child:
        """Start ``spec`` (in this thread: the death signal follows the forking thread)."""
        log = self.log_dir / f"{spec.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **dict(spec.env), **self.env}
        with log.open("ab") as stderr:
            process = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=self.new_session,
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
        """SIGTERM each child (its process group), SIGKILL after ``grace`` seconds; at once."""
        await asyncio.gather(*(self._stop_one(c, grace or self.grace) for c in children))

    async def stop_all(self) -> None:
        """Stop every child at once, then let their output pumps finish; never raises."""
        await self.stop(self.children)
        await self.finish_pumps()

    async def finish_pumps(self, timeout: float = 5.0) -> None:
        """Wait for the stdout pumps of stopped children (a pipe held open by a process this
        supervisor cannot signal must not hang the exit: cancelled after ``timeout``)."""
        pumps = [c.pump for c in self.children if c.pump is not None]
        if pumps:
            _, pending = await asyncio.wait(pumps, timeout=timeout)
            for pump in pending:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    async def _stop_one(self, child: Child, grace: float) -> None:
        if child.alive:
            self._signal(child, signal.SIGTERM)
            try:
                await asyncio.wait_for(child.process.wait(), grace)
            except TimeoutError:
                self._signal(child, signal.SIGKILL)
                await child.process.wait()
        if self.new_session:  # anything the leader left in its group
            self._signal(child, signal.SIGKILL)

    def _signal(self, child: Child, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.new_session:
                os.killpg(child.process.pid, signum)  # the session leader's pid is its group id
            else:
                child.process.send_signal(signum)


def last_line(log: Path, limit: int = 200) -> str:
    """The last non-empty line of ``log`` (cut to ``limit`` characters), ``""`` if none."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 8192))
            lines = [ln.strip() for ln in handle.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:limit] if lines else ""


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
