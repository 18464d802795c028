"""Test engines for the router tests: real asyncio objects honouring the Engine protocol."""

from __future__ import annotations

import asyncio

import pytest

from load_router import GenerateRequest, GenerateResult


class FakeEngine:
    """An in-process engine: returns ``k`` tokens per turn, logs every call in a shared log."""

    def __init__(
        self, engine_id: str, capacity: int = 64, log: list[tuple[str, str]] | None = None
    ) -> None:
        self._engine_id = engine_id
        self._capacity = capacity
        self.log = log if log is not None else []
        self.version = 0
        self.running = 0
        self.fail_generate = False
        self.fail_refresh = False
        self.gate: asyncio.Event | None = None  # when set, generate waits on it
        self.refresh_gate: asyncio.Event | None = None
        self.invalidations: list[bool] = []
        self.tokens_per_turn = 3

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
        self.log.append(("generate-start", self._engine_id))
        self.running += 1
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0)
            if self.fail_generate:
                raise ConnectionError("engine crashed")
            return GenerateResult(
                token_ids=(7,) * self.tokens_per_turn,
                logprobs=(-0.5,) * self.tokens_per_turn,
                policy_version=self.version,
            )
        finally:
            self.running -= 1
            self.log.append(("generate-end", self._engine_id))

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.log.append(("refresh-start", self._engine_id))
        if self.refresh_gate is not None:
            await self.refresh_gate.wait()
        await asyncio.sleep(0)
        if self.fail_refresh:
            raise OSError(f"could not load {weights_ref}")
        self.version = version
        self.invalidations.append(invalidate_caches)
        self.log.append(("refresh-end", self._engine_id))


@pytest.fixture
def engines() -> list[FakeEngine]:
    log: list[tuple[str, str]] = []
    return [FakeEngine(f"e{i}", capacity=64, log=log) for i in range(3)]


@pytest.fixture
def make_engine() -> type[FakeEngine]:
    return FakeEngine
