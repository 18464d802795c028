"""`AsyncSandbox` and `SandboxPool`: hundreds of sandboxes from one asyncio event loop.

Blocking backend calls run on a dedicated thread pool sized to the pool's concurrency, so the
event loop never blocks. The pool keeps `warm` empty sandboxes started ahead of demand, caps
concurrent sandboxes (`max_concurrency`) and sandbox starts per second (`start_rate`), reuses
(``"reset"``) or discards (``"discard"``) sandboxes after use, records latencies, and closes
everything on exit, exception or cancellation. At start-up it reaps orphans that a dead owner
left behind (by label / owner file), so even a SIGKILLed run leaves nothing after the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, ParamSpec, TypeVar

import attrs

from swe_sandbox._backend import Backend, User
from swe_sandbox._limits import Limits
from swe_sandbox._results import ExecResult, GradeResult
from swe_sandbox._sandbox import Sandbox, SandboxMetrics
from swe_sandbox._task import TaskSpec

P = ParamSpec("P")
T = TypeVar("T")


class AsyncSandbox:
    """The asyncio face of a `Sandbox`: same tools, awaited on the pool's executor."""

    def __init__(self, sandbox: Sandbox, executor: ThreadPoolExecutor) -> None:
        self.sync = sandbox
        self._executor = executor

    @property
    def id(self) -> str:
        """The sandbox id (`Sandbox.id`)."""
        return self.sync.id

    async def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    async def execute_bash(self, command: str, timeout: float | None = None) -> ExecResult:
        return await self._call(self.sync.execute_bash, command, timeout)

    async def edit_via_str_replace(self, path: str, old_str: str, new_str: str) -> str:
        return await self._call(self.sync.edit_via_str_replace, path, old_str, new_str)

    async def submit(self) -> GradeResult:
        return await self._call(self.sync.submit)

    async def grade(self) -> GradeResult:
        return await self._call(self.sync.grade)

    async def apply_patch(self, patch: str) -> None:
        await self._call(self.sync.apply_patch, patch)

    async def diff(self) -> str:
        return await self._call(self.sync.diff)

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        user: User = "agent",
        stdin: bytes | None = None,
    ) -> ExecResult:
        return await self._call(self.sync.run, command, timeout=timeout, user=user, stdin=stdin)

    async def close(self) -> None:
        await self._call(self.sync.close)


@attrs.frozen(kw_only=True)
class LatencyStats:
    """Summary of one latency series in seconds."""

    count: int
    median_s: float
    p95_s: float
    max_s: float

    @classmethod
    def of(cls, values: list[float]) -> LatencyStats:
        if not values:
            return cls(count=0, median_s=0.0, p95_s=0.0, max_s=0.0)
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * (len(ordered) - 1) + 0.5))]
        return cls(
            count=len(ordered), median_s=statistics.median(ordered), p95_s=p95, max_s=ordered[-1]
        )


class _StartRateLimiter:
    """At most `rate` starts per second, spaced evenly (a leaky bucket)."""

    def __init__(self, rate: float | None) -> None:
        self._interval = 0.0 if not rate else 1.0 / rate
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self._interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self._interval
        if delay > 0:
            await asyncio.sleep(delay)


class SandboxPool:
    """A warm, bounded pool of sandboxes driven from one asyncio event loop.

    Use as ``async with SandboxPool(backend) as pool:`` and ``async with pool.sandbox(task) as
    sb:``; every sandbox is closed when the pool exits (normally, by exception or by
    cancellation).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        limits: Limits | None = None,
        max_concurrency: int = 32,
        warm: int = 0,
        start_rate: float | None = None,
        policy: Literal["reset", "discard"] = "reset",
        reap_on_start: bool = True,
        warm_image: str | None = None,
        warm_masked: tuple[str, ...] = (),
    ) -> None:
        if max_concurrency < 1 or warm < 0 or warm > max_concurrency:
            raise ValueError("need max_concurrency >= 1 and 0 <= warm <= max_concurrency")
        if policy not in ("reset", "discard"):
            raise ValueError(f"policy must be 'reset' or 'discard', got {policy!r}")
        self.backend = backend
        self.limits = limits or Limits()
        self.max_concurrency = max_concurrency
        self.warm = warm
        self.policy = policy
        #: The environment the `warm` sandboxes start on (a task's `environment_image` and
        #: `masked_paths`); a task of another environment gets a sandbox of its own.
        self.warm_image, self.warm_masked = warm_image, warm_masked
        self._reap_on_start = reap_on_start
        self._executor = ThreadPoolExecutor(
            max_workers=max_concurrency + warm, thread_name_prefix="swe-sandbox"
        )
        self._slots = asyncio.Semaphore(max_concurrency)
        self._rate = _StartRateLimiter(start_rate)
        self._idle: list[Sandbox] = []
        self._live: set[Sandbox] = set()
        self._history: list[SandboxMetrics] = []
        self._closed = False
        self.reaped_at_start = 0

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def __aenter__(self) -> SandboxPool:
        if self._reap_on_start:
            self.reaped_at_start = await self._run(self.backend.reap_orphans)
        await asyncio.gather(*(self._start_idle() for _ in range(self.warm)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _start_idle(self) -> None:
        await self._rate.wait()
        sandbox = await self._run(
            lambda: Sandbox.start(
                self.backend, self.limits, image=self.warm_image, masked=self.warm_masked
            )
        )
        self._live.add(sandbox)
        if self._closed:
            await self._discard(sandbox)
        else:
            self._idle.append(sandbox)

    async def _discard(self, sandbox: Sandbox) -> None:
        self._live.discard(sandbox)
        await asyncio.shield(self._run(sandbox.close))

    async def acquire(self, task: TaskSpec) -> AsyncSandbox:
        """A sandbox with `task` loaded (warm if one is idle); waits for a free slot."""
        if self._closed:
            raise RuntimeError("pool is closed")
        await self._slots.acquire()
        try:
            image, masked = task.environment_image, task.masked_paths
            fits = [s for s in self._idle if (s.image, s.masked) == (image, masked)]
            if fits:
                sandbox = fits[-1]
                self._idle.remove(sandbox)
            else:
                if self._idle:  # a warm sandbox of another environment: make room for ours
                    await self._discard(self._idle.pop(0))
                await self._rate.wait()
                sandbox = await self._run(
                    lambda: Sandbox.start(self.backend, self.limits, image=image, masked=masked)
                )
                self._live.add(sandbox)
            try:
                await self._run(lambda: sandbox.load(task))
            except BaseException:
                await self._discard(sandbox)
                raise
        except BaseException:
            self._slots.release()
            raise
        self._history.append(sandbox.metrics)
        return AsyncSandbox(sandbox, self._executor)

    async def release(self, handle: AsyncSandbox) -> None:
        """Return a sandbox: reset into the idle set (``reset`` policy) or close it."""
        sandbox = handle.sync
        try:
            if self.policy == "reset" and not self._closed and not sandbox.closed:
                try:
                    await asyncio.shield(self._run(sandbox.reset))
                    self._idle.append(sandbox)
                    return
                except Exception:
                    pass  # a sandbox that cannot be reset is closed instead
            await self._discard(sandbox)
        finally:
            self._slots.release()

    @contextlib.asynccontextmanager
    async def sandbox(self, task: TaskSpec) -> AsyncIterator[AsyncSandbox]:
        """``async with pool.sandbox(task) as sb:`` — acquire, yield, always release."""
        handle = await self.acquire(task)
        try:
            yield handle
        finally:
            await self.release(handle)

    def metrics(self) -> dict[str, LatencyStats]:
        """Latency summaries over every sandbox this pool handed out: create, prepare, exec,
        grade."""
        runs = self._history
        return {
            "create": LatencyStats.of([m.create_s for m in runs if m.create_s > 0]),
            "prepare": LatencyStats.of([m.prepare_s for m in runs]),
            "exec": LatencyStats.of([x for m in runs for x in m.exec_s]),
            "grade": LatencyStats.of([x for m in runs for x in m.grade_s]),
        }

    @property
    def live_count(self) -> int:
        return len(self._live)

    async def aclose(self) -> None:
        """Close every sandbox (idle and in use) and the executor; idempotent."""
        self._closed = True
        victims, self._idle = list(self._live), []
        self._live.clear()
        await asyncio.shield(
            asyncio.gather(*(self._run(s.close) for s in victims), return_exceptions=True)
        )
        self._executor.shutdown(wait=False)
