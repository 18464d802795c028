"""Refresh modes of the Router: ``inflight`` refreshes engines under running turns, ``drain``
waits for them; both pause admission. A hypothesis state machine drives real asyncio turns
that sample one token per event-loop step on engines that pause in place during a refresh
(vLLM's keep mode), and checks every step against the contract."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from load_router import (
    ConfigError,
    EngineFailedError,
    EngineState,
    GenerateRequest,
    GenerateResult,
    Lease,
    LeaseState,
    RefreshMode,
    RefreshReport,
    Router,
)


class SteppedEngine:
    """Samples one token per event-loop step under its current version; ``refresh`` pauses its
    running sequences in place, waits for ``gate`` (the test decides when the load finishes),
    switches version and resumes them. It records what the router must never make it do."""

    def __init__(self, engine_id: str, shared: dict[str, int]) -> None:
        self._engine_id = engine_id
        self.shared = shared  # turns running on every engine together
        self.version = 0
        self.running = 0
        self.resumed = asyncio.Event()
        self.resumed.set()
        self.gate = asyncio.Event()
        self.fail_next_refresh = False
        self.router: Router | None = None
        self.started_while_paused = 0
        self.refresh_starts: list[tuple[int, int]] = []  # (running here, running everywhere)

    @property
    def engine_id(self) -> str:
        return self._engine_id

    @property
    def capacity(self) -> int:
        return 4

    @property
    def in_flight(self) -> int:
        return self.running

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if self.router is not None and self.router.paused:
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
        return GenerateResult((5,) * n, (-1.0,) * n, versions[-1], token_versions=versions)

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.refresh_starts.append((self.running, self.shared["running"]))
        self.resumed.clear()
        try:
            await self.gate.wait()
            if self.fail_next_refresh:
                raise OSError(f"cannot read {weights_ref}")
            self.version = version
        finally:
            self.gate.clear()
            self.resumed.set()


def request(index: int, n: int) -> GenerateRequest:
    return GenerateRequest(rollout_index=index, prompt_ids=(1, 2), max_new_tokens=n)


class RefreshMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.shared = {"running": 0}
        self.leases: list[Lease] = []
        self.turns: dict[tuple[int, int], asyncio.Task[GenerateResult]] = {}
        self.expected: dict[tuple[int, int], list[int]] = {}  # (lease, rollout) -> versions
        self.refresh_task: asyncio.Task[RefreshReport] | None = None
        self.refresh_mode = RefreshMode.DRAIN
        self.refresh_live: set[str] = set()
        self.version = 0
        self.ended_refreshes = 0

    def teardown(self) -> None:
        tasks = [*self.turns.values(), *([self.refresh_task] if self.refresh_task else [])]

        async def cancel_all() -> None:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.loop.run_until_complete(cancel_all())
        self.loop.close()

    def spin(self, steps: int) -> None:
        for _ in range(steps):
            self.loop.run_until_complete(asyncio.sleep(0))
        self.collect()

    def collect(self) -> None:
        """Fold finished turns into the reference: tokens recorded only for clean results."""
        for key, task in list(self.turns.items()):
            if not task.done():
                continue
            del self.turns[key]
            error = task.exception()
            if error is None:
                versions = list(task.result().token_versions)
                assert versions == sorted(versions)
                self.expected.setdefault(key, []).extend(versions)
            else:
                assert isinstance(error, EngineFailedError), error
        if self.refresh_task is not None and self.refresh_task.done():
            self.finish_refresh(self.refresh_task.result())

    def finish_refresh(self, report: RefreshReport) -> None:
        self.refresh_task = None
        self.ended_refreshes += 1
        assert report.mode is self.refresh_mode
        assert report.version == self.router.version == self.version
        assert set(report.refreshed) | set(report.failed) == self.refresh_live
        assert not self.router.paused
        for engine in self.engines:
            if engine.engine_id in report.refreshed:
                assert engine.version == self.version
                if self.refresh_mode is RefreshMode.DRAIN:  # nothing ran anywhere meanwhile
                    assert engine.refresh_starts[-1] == (0, 0)

    def _state(self, engine: SteppedEngine) -> EngineState:
        snapshot = {e.engine_id: e.state for e in self.router.snapshot().engines}
        return snapshot.get(engine.engine_id, EngineState.DOWN)

    # ---------------------------------------------------------------- rules
    @initialize(count=st.integers(1, 3))
    def build(self, count: int) -> None:
        self.engines = [SteppedEngine(f"e{i}", self.shared) for i in range(count)]
        self.router = Router(self.engines)
        for engine in self.engines:
            engine.router = self.router

    @rule(size=st.integers(1, 3))
    def lease(self, size: int) -> None:
        try:
            lease = self.router.try_acquire(f"g{len(self.leases)}", size)
        except Exception:  # every engine down: nothing to lease, which is fine here
            return
        if lease is not None:
            self.leases.append(lease)

    @precondition(lambda self: bool(self.leases))
    @rule(pick=st.integers(0, 50), rollout=st.integers(0, 2), n=st.integers(1, 8))
    def start_turn(self, pick: int, rollout: int, n: int) -> None:
        index = pick % len(self.leases)
        lease = self.leases[index]
        key = (index, rollout % lease.size)
        if key in self.turns or not lease.active:
            return
        self.turns[key] = self.loop.create_task(lease.generate(request(key[1], n)))
        self.spin(1)

    @rule(steps=st.integers(1, 6))
    def run(self, steps: int) -> None:
        self.spin(steps)

    @precondition(lambda self: self.refresh_task is None)
    @rule(inflight=st.booleans(), fail=st.integers(-1, 3))
    def start_refresh(self, inflight: bool, fail: int) -> None:
        self.refresh_mode = RefreshMode.INFLIGHT if inflight else RefreshMode.DRAIN
        self.version += 1
        live = [e for e in self.engines if self._state(e) is not EngineState.DOWN]
        self.refresh_live = {e.engine_id for e in live}
        if 0 <= fail < len(live):
            live[fail].fail_next_refresh = True
        refresh = self.router.refresh(f"w{self.version}", self.version, mode=self.refresh_mode)
        self.refresh_task = self.loop.create_task(refresh)
        self.loop.run_until_complete(asyncio.sleep(0))
        assert self.router.paused or self.refresh_task.done()  # (nothing left to refresh)
        started = [e for e in live if len(e.refresh_starts) == self.ended_refreshes + 1]
        if self.refresh_mode is RefreshMode.INFLIGHT:
            # at once, under the running turns
            assert {e.engine_id for e in started} == self.refresh_live
        else:  # drain: only once no turn runs anywhere
            assert all(e.refresh_starts[-1] == (0, 0) for e in started)
            if self.shared["running"]:
                assert not started
        self.spin(1)

    @precondition(lambda self: self.refresh_task is not None)
    @rule(steps=st.integers(0, 4))
    def finish_loading(self, steps: int) -> None:
        for engine in self.engines:
            engine.gate.set()
        self.spin(steps + 3)

    # ---------------------------------------------------------------- invariants
    @invariant()
    def contract_holds(self) -> None:
        if not hasattr(self, "router"):
            return
        assert all(e.started_while_paused == 0 for e in self.engines)  # admission paused
        for (index, rollout), versions in self.expected.items():
            lease = self.leases[index]
            if lease.state is LeaseState.ACTIVE:
                assert lease.versions[rollout].per_token() == versions
        for engine in self.engines:
            if self._state(engine) is EngineState.UP:
                assert engine.version <= self.version


RefreshMachine.TestCase.settings = settings(
    RefreshMachine.TestCase.settings, stateful_step_count=40, max_examples=150, deadline=None
)
TestRefreshMachine = RefreshMachine.TestCase


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
        with pytest.raises(ConfigError, match="refresh mode must be one of inflight, drain"):
            await router.refresh("w1", 1, mode="eager")
        with pytest.raises(ConfigError, match="refresh_timeout"):
            await router.refresh("w1", 1, refresh_timeout=-1.0)
        assert router.version == 0
        assert not router.paused

    run(scenario)
