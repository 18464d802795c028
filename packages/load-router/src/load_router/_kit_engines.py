"""Test engines of the property-testing kit: real asyncio objects honouring the Engine protocol.

No hypothesis here: these are plain doubles a user may also drive by hand.
"""

from __future__ import annotations

import asyncio
from typing import Any

from load_router._engine import GenerateRequest, GenerateResult
from load_router._scheduler import Scheduler


class InstantEngine:
    """Returns ``max_new_tokens`` tokens at once, all at its current policy version."""

    def __init__(self, engine_id: str, capacity: int, version: int = 0) -> None:
        self._engine_id = engine_id
        self._capacity = capacity
        self.version = version

    @property
    def engine_id(self) -> str:
        return self._engine_id

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_flight(self) -> int:
        return 0

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        n = request.max_new_tokens
        ids: Any = (1,) * n  # attrs' tuple converter confuses mypy's generics
        logprobs: Any = (0.0,) * n
        return GenerateResult(token_ids=ids, logprobs=logprobs, policy_version=self.version)

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.version = version


class SteppedEngine:
    """Samples one token per event-loop step under its current version.

    ``refresh`` pauses the running sequences in place (vLLM's keep mode), waits for ``gate`` (the
    caller decides when the weights finish loading), switches version and resumes them; with
    ``fail_next_refresh`` it raises instead. It records what a scheduler must never make it do:
    ``started_while_paused`` counts turns started while ``scheduler.paused``, and
    ``refresh_starts`` holds ``(turns running here, turns running on every engine)`` at each
    refresh call. ``shared["running"]`` counts turns running on every engine sharing the dict.
    """

    def __init__(self, engine_id: str, shared: dict[str, int], capacity: int = 4) -> None:
        self._engine_id = engine_id
        self._capacity = capacity
        self.shared = shared
        self.version = 0
        self.running = 0
        self.resumed = asyncio.Event()
        self.resumed.set()
        self.gate = asyncio.Event()
        self.fail_next_refresh = False
        self.scheduler: Scheduler[Any] | None = None
        self.started_while_paused = 0
        self.refresh_starts: list[tuple[int, int]] = []

    @property
    def engine_id(self) -> str:
        return self._engine_id

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_flight(self) -> int:
        return self.running

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if self.scheduler is not None and self.scheduler.paused:
            self.started_while_paused += 1
        self.running += 1
        self.shared["running"] += 1
        versions: list[int] = []
        try:
            for _ in range(request.max_new_tokens):
                await asyncio.sleep(0)
                await self.resumed.wait()  # paused in place (keep mode) during a refresh
                versions.append(self.version)
        finally:
            self.running -= 1
            self.shared["running"] -= 1
        n = len(versions)
        ids: Any = (5,) * n  # attrs' tuple converter confuses mypy's generics
        logprobs: Any = (-1.0,) * n
        stamped: Any = versions
        return GenerateResult(ids, logprobs, versions[-1], token_versions=stamped)

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.refresh_starts.append((self.running, self.shared["running"]))
        self.resumed.clear()
        try:
            await self.gate.wait()
            if self.fail_next_refresh:
                self.fail_next_refresh = False
                raise OSError(f"cannot read {weights_ref}")
            self.version = version
        finally:
            self.gate.clear()
            self.resumed.set()
