"""Router behaviour under asyncio: placement, back-pressure, failure, drain, refresh ordering."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from load_router import (
    DuplicateEngineError,
    EngineFailedError,
    EngineState,
    GenerateRequest,
    GroupTooLargeError,
    InvalidCapError,
    InvalidGroupSizeError,
    LeaseClosedError,
    LeaseDrainedError,
    LeaseState,
    NoEngineAvailableError,
    NoEnginesError,
    PolicyClock,
    RefreshInProgressError,
    RetryableError,
    Router,
    SessionHash,
    StaleVersionError,
    UnknownEngineError,
)


def request(rollout: int = 0) -> GenerateRequest:
    return GenerateRequest(rollout_index=rollout, prompt_ids=(1, 2), max_new_tokens=4)


def residents(router: Router) -> dict[str, int]:
    return {e.engine_id: e.resident for e in router.snapshot().engines}


def test_groups_go_whole_to_the_least_loaded_engine(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines, max_resident_per_engine=16)
        first = await router.acquire("g0", 8)
        second = await router.acquire("g1", 4)
        third = await router.acquire("g2", 2)
        assert (first.engine_id, second.engine_id, third.engine_id) == ("e0", "e1", "e2")
        fourth = await router.acquire("g3", 1)
        assert fourth.engine_id == "e2"  # 2 < 4 < 8
        assert residents(router) == {"e0": 8, "e1": 4, "e2": 3}
        second.release()
        assert (await router.acquire("g4", 4)).engine_id == "e1"  # e1 back to 0

    asyncio.run(scenario())


def test_back_pressure_waits_without_spinning_and_serves_fifo(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:2], max_resident_per_engine=8)
        held = [await router.acquire(f"g{i}", 8) for i in range(2)]
        order: list[str] = []

        async def wait_for(group: str, size: int) -> None:
            lease = await router.acquire(group, size)
            order.append(f"{group}@{lease.engine_id}")

        waiters = [asyncio.create_task(wait_for(f"w{i}", 8 - i)) for i in range(3)]
        cpu_before = time.process_time()
        await asyncio.sleep(0.3)
        assert time.process_time() - cpu_before < 0.1  # awaiting a future, not polling
        assert order == []
        assert router.waiting == 3
        assert router.try_acquire("barger", 1) is None  # no barging past queued callers
        held[1].release()
        await asyncio.sleep(0)
        assert order == ["w0@e1"]  # the head gets the freed engine; w1 (7) must wait
        held[0].release()
        await asyncio.gather(*waiters[:2])
        assert order == ["w0@e1", "w1@e0"]
        assert not waiters[2].done()
        waiters[2].cancel()
        await asyncio.gather(waiters[2], return_exceptions=True)
        assert router.waiting == 0
        assert residents(router) == {"e0": 7, "e1": 8}

    asyncio.run(scenario())


def test_head_of_line_blocks_smaller_groups(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1], max_resident_per_engine=8)
        await router.acquire("a", 6)
        big = asyncio.create_task(router.acquire("big", 8))
        small = asyncio.create_task(router.acquire("small", 1))
        await asyncio.sleep(0.01)
        assert not big.done()
        assert not small.done()  # 1 would fit, but FIFO keeps it behind the 8
        big.cancel()
        lease = await small
        assert lease.group_id == "small"

    asyncio.run(scenario())


def test_cancelled_waiter_never_leaks_capacity(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1], max_resident_per_engine=4)
        first = await router.acquire("a", 4)
        waiter = asyncio.create_task(router.acquire("b", 4))
        await asyncio.sleep(0)
        first.release()  # grants b's future ...
        waiter.cancel()  # ... but b is cancelled before it resumes
        with pytest.raises(asyncio.CancelledError):
            await waiter
        snapshot = router.snapshot()
        assert snapshot.active == 0
        assert snapshot.granted == snapshot.completed + snapshot.failed
        assert residents(router) == {"e0": 0}

    asyncio.run(scenario())


def test_engine_failure_marks_it_down_and_is_retryable(
    engines: list[Any], make_engine: Callable[..., Any]
) -> None:
    async def scenario() -> None:
        router = Router(engines[:2], max_resident_per_engine=8)
        doomed = await router.acquire("a", 4)
        sibling = await router.acquire("b", 4)  # e1
        other = await router.acquire("c", 4)  # e0 again (4 vs 4, registration order)
        assert (doomed.engine_id, other.engine_id) == ("e0", "e0")
        engines[0].fail_generate = True
        with pytest.raises(EngineFailedError) as caught:
            await doomed.generate(request())
        assert isinstance(caught.value, RetryableError)
        assert doomed.state is LeaseState.FAILED
        assert other.state is LeaseState.FAILED
        assert other.engine_failed
        with pytest.raises(EngineFailedError):
            await other.generate(request())
        with pytest.raises(LeaseClosedError):
            other.release()
        states = {e.engine_id: e.state for e in router.snapshot().engines}
        assert states == {"e0": EngineState.DOWN, "e1": EngineState.UP}
        retry = await router.acquire("a", 4)
        assert retry.engine_id == "e1"
        assert sibling.active
        snapshot = router.snapshot()
        assert (snapshot.granted, snapshot.active, snapshot.failed) == (4, 2, 2)
        replacement = make_engine("e0")
        router.add_engine(replacement)  # a DOWN id can be reused
        assert (await router.acquire("d", 8)).engine_id == "e0"

    asyncio.run(scenario())


def test_failure_of_the_last_engine_fails_waiters(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1], max_resident_per_engine=4)
        await router.acquire("a", 4)
        waiter = asyncio.create_task(router.acquire("b", 2))
        await asyncio.sleep(0)
        router.mark_down("e0", "health check failed")
        with pytest.raises(NoEngineAvailableError):
            await waiter
        with pytest.raises(NoEngineAvailableError):
            await router.acquire("c", 1)

    asyncio.run(scenario())


def test_graceful_drain_and_runtime_add(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1], max_resident_per_engine=4)
        lease = await router.acquire("a", 4)
        router.drain("e0")
        with pytest.raises(NoEngineAvailableError):
            router.try_acquire("b", 1)
        drained = asyncio.create_task(router.wait_drained("e0"))
        await lease.generate(request())  # existing leases keep working
        await asyncio.sleep(0)
        assert not drained.done()
        lease.release()
        await drained
        assert [e.engine_id for e in router.snapshot().engines] == []
        router.add_engine(engines[1])
        assert (await router.acquire("b", 4)).engine_id == "e1"

    asyncio.run(scenario())


def test_forced_drain_ends_leases_as_drained(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:2], max_resident_per_engine=4)
        lease = await router.acquire("a", 3)
        router.drain("e0", force=True)
        assert lease.state is LeaseState.DRAINED
        with pytest.raises(LeaseDrainedError):
            await lease.generate(request())
        with pytest.raises(LeaseClosedError):
            lease.release()
        assert router.snapshot().drained == 1
        assert (await router.acquire("a", 3)).engine_id == "e1"
        with pytest.raises(UnknownEngineError):
            router.drain("e0")

    asyncio.run(scenario())


def test_refresh_pauses_generation_and_refreshes_concurrently(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines, max_resident_per_engine=8)
        log = engines[0].log
        leases = [await router.acquire(f"g{i}", 2) for i in range(3)]
        gate = asyncio.Event()
        for engine in engines:
            engine.gate = gate
        running = [asyncio.create_task(lease.generate(request())) for lease in leases]
        await asyncio.sleep(0)
        refresh_gate = asyncio.Event()
        for engine in engines:
            engine.refresh_gate = refresh_gate
        refresh = asyncio.create_task(router.refresh("ckpt-1", 1))
        await asyncio.sleep(0)
        assert router.paused
        late = asyncio.create_task(leases[0].generate(request(1)))  # issued during the pause
        blocked = asyncio.create_task(router.acquire("new", 1))  # admission is paused too
        await asyncio.sleep(0.01)
        assert not any(kind == "refresh-start" for kind, _ in log)  # waits for running turns
        assert not blocked.done()
        gate.set()
        await asyncio.sleep(0.01)
        starts = [i for i, (kind, _) in enumerate(log) if kind == "refresh-start"]
        assert len(starts) == 3  # all engines refresh at once ...
        assert not any(kind == "refresh-end" for kind, _ in log)  # ... and none has finished
        refresh_gate.set()
        report = await refresh
        await asyncio.gather(*running, late, blocked)
        pause_begin = starts[0]
        resume = max(i for i, (kind, _) in enumerate(log) if kind == "refresh-end")
        between = [kind for kind, _ in log[pause_begin : resume + 1]]
        assert "generate-start" not in between
        assert "generate-end" not in between
        assert report.refreshed == ("e0", "e1", "e2")
        assert report.version == router.version == 1
        assert all(engine.invalidations == [True] for engine in engines)
        # the turn before the refresh was sampled at version 0, the late one at version 1
        assert leases[0].versions[0].runs == ((0, 3),)
        assert leases[0].versions[1].runs == ((1, 3),)

    asyncio.run(scenario())


def test_refresh_failure_ablation_and_version_checks(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines, max_resident_per_engine=8)
        lease = await router.acquire("g", 2)
        assert lease.engine_id == "e0"
        engines[0].fail_refresh = True
        report = await router.refresh("ckpt-1", 1, invalidate_caches=False)
        assert report.failed == (lease.engine_id,)
        assert lease.state is LeaseState.FAILED
        assert not report.invalidated_caches
        assert [e.invalidations for e in engines if e.engine_id != lease.engine_id] == [
            [False],
            [False],
        ]
        with pytest.raises(StaleVersionError):
            await router.refresh("ckpt-0", 1)
        first = asyncio.create_task(router.refresh("ckpt-2", 2))
        await asyncio.sleep(0)
        with pytest.raises(RefreshInProgressError):
            await router.refresh("ckpt-3", 3)
        await first
        assert router.version == 2
        assert not router.paused

    asyncio.run(scenario())


def test_lag_of_a_group_spanning_refreshes(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1], max_resident_per_engine=8)
        clock = PolicyClock(max_off_policy=1)
        async with router.lease("g", 2) as lease:
            await lease.generate(request(0))
            for version in (1, 2):
                await router.refresh(f"ckpt-{version}", version)
                clock.advance()
            await lease.generate(request(1))
        assert lease.state is LeaseState.COMPLETED
        record = lease.record()
        assert record.lag_at(clock.version) == 2
        assert clock.screen([record]).dropped == (record,)
        assert clock.dropped_this_update == 1

    asyncio.run(scenario())


def test_lease_context_manager_fails_on_error(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1])
        with pytest.raises(RuntimeError):
            async with router.lease("g", 2) as lease:
                raise RuntimeError("sandbox crashed")
        assert lease.state is LeaseState.FAILED
        assert residents(router) == {"e0": 0}

    asyncio.run(scenario())


def test_bad_input_gets_clear_errors_and_keeps_counters(
    engines: list[Any], make_engine: Callable[..., Any]
) -> None:
    with pytest.raises(NoEnginesError):
        Router([])
    for cap in (0, -4):
        with pytest.raises(InvalidCapError):
            Router(engines, max_resident_per_engine=cap)
    with pytest.raises(InvalidCapError):
        Router([make_engine("bad", capacity=-1)])
    with pytest.raises(DuplicateEngineError):
        Router([make_engine("x"), make_engine("x")])

    async def scenario() -> None:
        router = Router(engines, max_resident_per_engine=8)
        with pytest.raises(GroupTooLargeError, match="exceeds the largest resident cap"):
            await router.acquire("g", 9)
        for size in (0, -1):
            with pytest.raises(InvalidGroupSizeError):
                await router.acquire("g", size)
        lease = await router.acquire("g", 5)
        lease.release()
        before = router.snapshot()
        with pytest.raises(LeaseClosedError, match="already ended as completed"):
            lease.release()
        with pytest.raises(LeaseClosedError):
            await lease.generate(request())
        assert router.snapshot() == before
        other = Router([make_engine("o")])
        foreign = await other.acquire("h", 1)
        with pytest.raises(LeaseClosedError, match="another router"):
            router.release(foreign)
        with pytest.raises(ValueError, match="COMPLETED or FAILED"):
            router.release(await router.acquire("i", 1), LeaseState.DRAINED)
        with pytest.raises(ValueError, match="out of range"):
            await (await router.acquire("j", 2)).generate(request(2))
        with pytest.raises(DuplicateEngineError):
            router.add_engine(make_engine("e1"))
        with pytest.raises(UnknownEngineError, match="nope"):
            router.mark_down("nope")

    asyncio.run(scenario())


def test_session_hash_router_waits_for_its_engine(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines, policy=SessionHash(), max_resident_per_engine=4)
        first = await router.acquire("task-1", 4)
        waiter = asyncio.create_task(router.acquire("task-1", 1))
        await asyncio.sleep(0.01)
        assert not waiter.done()  # other engines are empty, but the hash pins task-1
        first.release()
        assert (await waiter).engine_id == first.engine_id

    asyncio.run(scenario())


def test_snapshot_reports_engine_in_flight(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1])
        lease = await router.acquire("g", 2)
        gate = asyncio.Event()
        engines[0].gate = gate
        task = asyncio.create_task(lease.generate(request()))
        await asyncio.sleep(0)
        (engine,) = router.snapshot().engines
        assert (engine.engine_in_flight, engine.resident, engine.leases) == (1, 2, 1)
        gate.set()
        await task

    asyncio.run(scenario())


def test_engine_that_missed_a_refresh_is_marked_down(
    engines: list[Any], make_engine: Callable[..., Any]
) -> None:
    async def scenario() -> None:
        router = Router(engines[:1])
        await router.refresh("ckpt-1", 1)
        late = make_engine("late")  # still serving version 0
        router.drain("e0")
        router.add_engine(late)
        lease = await router.acquire("g", 1)
        with pytest.raises(EngineFailedError, match="reported policy version 0, router is at 1"):
            await lease.generate(request())
        assert lease.versions[0].num_tokens == 0  # nothing stale was recorded
        assert router.snapshot().engines[-1].state is EngineState.DOWN

    asyncio.run(scenario())


def test_refresh_marks_down_an_engine_with_a_hung_turn(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:2], max_resident_per_engine=8)
        stuck = await router.acquire("a", 4)
        healthy = await router.acquire("b", 4)
        engines[0].gate = asyncio.Event()  # never set: the turn hangs
        hung_turn = asyncio.create_task(stuck.generate(request()))
        await asyncio.sleep(0)
        report = await router.refresh("ckpt-1", 1, turn_timeout=0.05)
        assert report.failed == ("e0",)
        assert report.refreshed == ("e1",)
        assert stuck.state is LeaseState.FAILED
        assert engines[0].invalidations == []  # never refreshed while a turn ran on it
        assert (await healthy.generate(request())).policy_version == 1
        engines[0].gate.set()
        with pytest.raises(EngineFailedError):
            await hung_turn
        with pytest.raises(ValueError, match="turn_timeout"):
            await router.refresh("ckpt-2", 2, turn_timeout=-1)

    asyncio.run(scenario())
