"""Refresh modes of the Router: ``inflight`` refreshes engines under running turns, ``drain``
waits for them; both pause admission. The public refresh contract (``load_router.testing``)
drives real asyncio turns that sample one token per event-loop step on engines that pause in
place during a refresh (vLLM's keep mode) and checks every step; worked examples follow."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import settings

from load_router import (
    EngineFailedError,
    GenerateRequest,
    InvalidArgumentError,
    LeaseState,
    RefreshMode,
    Router,
)
from load_router.testing import SteppedEngine, refresh_contract

TestRefreshContract = refresh_contract(lambda engines: Router(engines)).TestCase
TestRefreshContract.settings = settings(
    TestRefreshContract.settings, stateful_step_count=40, max_examples=150, deadline=None
)


def request(index: int, n: int) -> GenerateRequest:
    prompt: Any = (1, 2)  # attrs' tuple converter confuses mypy's generics
    return GenerateRequest(rollout_index=index, prompt_ids=prompt, max_new_tokens=n)


# ---------------------------------------------------------------- worked examples
def run(scenario: Any) -> Any:
    return asyncio.run(scenario())


def test_inflight_refresh_changes_versions_inside_a_turn() -> None:
    async def scenario() -> None:
        shared = {"running": 0}
        engine = SteppedEngine("e0", shared)
        router = Router([engine])
        lease = await router.acquire("g", 1)
        turn = asyncio.create_task(lease.generate(request(0, 8)))
        for _ in range(4):
            await asyncio.sleep(0)
        refresh = asyncio.create_task(router.refresh("w1", 1, mode="inflight"))
        for _ in range(2):
            await asyncio.sleep(0)
        assert engine.refresh_starts == [(1, 1)]  # the turn was still running
        engine.gate.set()
        report = await refresh
        result = await turn
        switch = result.token_versions.index(1)
        assert 0 < switch < 8
        assert result.token_versions == (0,) * switch + (1,) * (8 - switch)
        assert lease.versions[0].runs == ((0, switch), (1, 8 - switch))
        assert report.mode is RefreshMode.INFLIGHT
        assert report.refreshed == ("e0",)

    run(scenario)


def test_drain_refresh_waits_for_the_turn_and_keeps_one_version_per_turn() -> None:
    async def scenario() -> None:
        engine = SteppedEngine("e0", {"running": 0})
        router = Router([engine])
        lease = await router.acquire("g", 1)
        turn = asyncio.create_task(lease.generate(request(0, 8)))
        await asyncio.sleep(0)
        engine.gate.set()
        report = await router.refresh("w1", 1, mode=RefreshMode.DRAIN)
        assert (await turn).token_versions == (0,) * 8
        assert engine.refresh_starts == [(0, 0)]
        assert report.mode is RefreshMode.DRAIN

    run(scenario)


def test_inflight_refresh_failure_fails_the_running_turn_retryably() -> None:
    async def scenario() -> None:
        engines = [SteppedEngine(f"e{i}", {"running": 0}) for i in range(2)]
        router = Router(engines)
        lease = await router.acquire("g", 2)
        turn = asyncio.create_task(lease.generate(request(0, 6)))
        await asyncio.sleep(0)
        engines[0].fail_next_refresh = True
        for engine in engines:
            engine.gate.set()
        report = await router.refresh("w1", 1, mode="inflight")
        assert report.failed == ("e0",)
        assert report.refreshed == ("e1",)
        with pytest.raises(EngineFailedError):
            await turn
        assert lease.state is LeaseState.FAILED

    run(scenario)


def test_a_refresh_that_never_returns_is_bounded_by_refresh_timeout() -> None:
    async def scenario() -> None:
        engines = [SteppedEngine(f"e{i}", {"running": 0}) for i in range(2)]
        router = Router(engines)
        engines[1].gate.set()  # e0's load never finishes
        report = await router.refresh("w1", 1, mode="inflight", refresh_timeout=0.05)
        assert report.failed == ("e0",)
        assert router.version == 1
        assert not router.paused

    run(scenario)


def test_bad_refresh_arguments_are_config_errors() -> None:
    async def scenario() -> None:
        router = Router([SteppedEngine("e0", {"running": 0})])
        with pytest.raises(
            InvalidArgumentError, match="refresh mode must be one of inflight, drain"
        ):
            await router.refresh("w1", 1, mode="eager")
        with pytest.raises(InvalidArgumentError, match="refresh_timeout"):
            await router.refresh("w1", 1, refresh_timeout=-1.0)
        assert router.version == 0
        assert not router.paused

    run(scenario)
