"""Parallel curation on swe-sandbox's :class:`~swe_sandbox.SandboxPool`.

The pool is asyncio-driven; the curation stages are plain synchronous code (one task per worker
thread). :class:`PoolRunner` runs the pool on a private event-loop thread and hands each worker
a :class:`PooledScorer`, a :class:`SandboxScorer` whose sandboxes are acquired from and released
to the pool. The pool bounds how many sandboxes live at once (``--workers``), reaps orphans of
dead runs at start-up, reuses released sandboxes, and closes every one of them at exit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from swe_curate._scorer import SandboxScorer
from swe_sandbox import AsyncSandbox, Backend, Limits, Sandbox, SandboxPool, TaskSpec

T = TypeVar("T")


class PoolRunner:
    """A :class:`SandboxPool` of ``workers`` sandboxes on its own event-loop thread."""

    def __init__(self, backend: Backend, limits: Limits, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.backend, self.limits, self.workers = backend, limits, workers
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="swe-curate-pool", daemon=True
        )
        self._thread.start()
        self.pool = SandboxPool(backend, limits=limits, max_concurrency=workers)
        try:
            self._call(self.pool.__aenter__())
        except BaseException:
            self._stop()
            raise

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def acquire(self, task: TaskSpec) -> AsyncSandbox:
        """A pooled sandbox with ``task`` loaded (blocks while all ``workers`` are out)."""
        return self._call(self.pool.acquire(task))

    def release(self, handle: AsyncSandbox) -> None:
        """Return a sandbox to the pool (reset for reuse, or closed)."""
        self._call(self.pool.release(handle))

    def scorer(self) -> PooledScorer:
        """A scorer for one worker thread."""
        return PooledScorer(self)

    def close(self) -> None:
        """Close every pooled sandbox and stop the loop thread (idempotent)."""
        if self._loop.is_closed():
            return
        try:
            self._call(self.pool.aclose())
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def __enter__(self) -> PoolRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PooledScorer(SandboxScorer):
    """A :class:`SandboxScorer` drawing its sandbox from a :class:`PoolRunner`'s pool."""

    def __init__(self, runner: PoolRunner) -> None:
        super().__init__(runner.backend, runner.limits)
        self.runner = runner
        self._handles: dict[int, AsyncSandbox] = {}

    def _open(self, task: TaskSpec) -> Sandbox:
        handle = self.runner.acquire(task)
        self._handles[id(handle.sync)] = handle
        return handle.sync

    def _discard(self, sandbox: Sandbox) -> None:
        handle = self._handles.pop(id(sandbox), None)
        if handle is not None:
            self.runner.release(handle)
        else:  # pragma: no cover - every sandbox here came from the pool
            sandbox.close()
