"""The :class:`Router`: group leasing, resident caps, FIFO back-pressure, failure, drain, refresh.

Arctic-SWE §3.3: each group goes whole to the engine with the fewest resident
rollouts, under a per-engine cap on resident sequences; when every engine is full, callers wait
in FIFO order. The weight-refresh protocol pauses admission, refreshes all engines concurrently
(each invalidates its caches and re-prefills resident sequences) and resumes — either under the
running turns (``inflight``) or after they return (``drain``).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterable

import attrs

from load_router._engine import Engine, GenerateRequest, GenerateResult
from load_router._errors import (
    DuplicateEngineError,
    EngineFailedError,
    GroupTooLargeError,
    InvalidArgumentError,
    InvalidCapError,
    InvalidGroupSizeError,
    LeaseClosedError,
    LeaseDrainedError,
    NoEngineAvailableError,
    NoEnginesError,
    RefreshInProgressError,
    StaleVersionError,
    UnknownEngineError,
)
from load_router._lease import Lease, LeaseState
from load_router._policies import LeastLoaded, PlacementPolicy


class EngineState(enum.Enum):
    """An engine's standing in the registry."""

    UP = "up"  # takes new groups
    DRAINING = "draining"  # serves its leases, takes nothing new, leaves when empty
    DOWN = "down"  # failed: holds nothing, takes nothing


@attrs.frozen
class EngineSnapshot:
    """One engine as the router sees it (``engine_in_flight`` is the engine's own count)."""

    engine_id: str
    state: EngineState
    cap: int
    resident: int
    leases: int
    engine_in_flight: int


@attrs.frozen
class RouterSnapshot:
    """Counters for monitoring; ``granted == active + completed + failed + drained`` always."""

    engines: tuple[EngineSnapshot, ...]
    waiting: int
    paused: bool
    version: int
    granted: int
    active: int
    completed: int
    failed: int
    drained: int


class RefreshMode(enum.Enum):
    """How :meth:`Router.refresh` treats turns that are running when it starts."""

    INFLIGHT = "inflight"  # refresh engines under running turns (pause-keep, re-prefill, resume)
    DRAIN = "drain"  # wait for every running turn to return, then refresh


def _refresh_mode(mode: RefreshMode | str) -> RefreshMode:
    try:
        return RefreshMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in RefreshMode)
        raise InvalidArgumentError(f"refresh mode must be one of {choices}, got {mode!r}") from None


async def _bounded(call: Awaitable[None], timeout: float | None) -> None:
    if timeout is None:
        await call
    else:
        await asyncio.wait_for(call, timeout)


@attrs.frozen
class RefreshReport:
    """What :meth:`Router.refresh` did: engines refreshed, engines that failed, pause length
    (admission paused from the call to the resume), and the mode used."""

    version: int
    refreshed: tuple[str, ...]
    failed: tuple[str, ...]
    invalidated_caches: bool
    paused_seconds: float
    mode: RefreshMode = RefreshMode.DRAIN


class _Slot:
    """Mutable registry entry of one engine."""

    __slots__ = ("cap", "drained", "engine", "idle", "leases", "resident", "running", "state")

    def __init__(self, engine: Engine, cap: int) -> None:
        self.engine = engine
        self.cap = cap
        self.state = EngineState.UP
        self.resident = 0
        self.running = 0  # generate calls in progress on this engine
        self.idle = asyncio.Event()  # set while ``running == 0``
        self.idle.set()
        self.leases: dict[int, Lease] = {}
        self.drained = asyncio.Event()


@attrs.define
class _Waiter:
    group_id: str
    size: int
    future: asyncio.Future[Lease]


def _validated_cap(value: int | None, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidCapError(f"{what} must be a positive integer, got {value!r}")
    return value


class Router:
    """Leases whole groups to engines under a resident cap, with FIFO back-pressure.

    ``engines`` must be non-empty with unique ids; ``policy`` defaults to :class:`LeastLoaded`;
    ``max_resident_per_engine`` (``None`` = the engine's own ``capacity``) caps the rollouts
    leased to any one engine; ``version`` is the policy version the engines start at.
    Construct inside a running event loop or before one starts; use from one loop only.
    """

    def __init__(
        self,
        engines: Iterable[Engine],
        policy: PlacementPolicy | None = None,
        max_resident_per_engine: int | None = None,
        *,
        version: int = 0,
    ) -> None:
        engine_list = list(engines)
        if not engine_list:
            raise NoEnginesError("a router needs at least one engine")
        self._max_resident = _validated_cap(max_resident_per_engine, "max_resident_per_engine")
        if version < 0:
            raise InvalidArgumentError(f"version must be >= 0, got {version}")
        self._policy = policy if policy is not None else LeastLoaded()
        self._index = self._policy.new_index()
        self._slots: dict[str, _Slot] = {}
        self._waiters: deque[_Waiter] = deque()
        self._version = version
        self._paused = False
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._refreshing = False
        self._target_version = version
        self._next_lease_id = 0
        self._counts = dict.fromkeys(LeaseState, 0)
        self._granted = 0
        self._largest_cap = 0
        ids = [e.engine_id for e in engine_list]
        if len(set(ids)) != len(ids):
            raise DuplicateEngineError(f"duplicate engine ids in {ids}")
        caps = [self._effective_cap(e) for e in engine_list]  # validate all before mutating
        for engine, cap in zip(engine_list, caps, strict=True):
            self._register(engine, cap)

    # ----------------------------------------------------------------- registry
    @property
    def policy(self) -> PlacementPolicy:
        return self._policy

    @property
    def version(self) -> int:
        """The policy version of the last completed refresh."""
        return self._version

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def waiting(self) -> int:
        """Callers queued for capacity."""
        return sum(1 for w in self._waiters if not w.future.done())

    def _effective_cap(self, engine: Engine) -> int:
        capacity = _validated_cap(engine.capacity, f"capacity of engine {engine.engine_id!r}")
        assert capacity is not None
        return capacity if self._max_resident is None else min(capacity, self._max_resident)

    def _register(self, engine: Engine, cap: int) -> None:
        self._slots[engine.engine_id] = _Slot(engine, cap)
        self._index.add(engine.engine_id, cap)
        self._largest_cap = max(self._largest_cap, cap)

    def _slot(self, engine_id: str) -> _Slot:
        try:
            return self._slots[engine_id]
        except KeyError:
            raise UnknownEngineError(f"no engine {engine_id!r} is registered") from None

    def _recompute_largest_cap(self) -> None:
        caps = [s.cap for s in self._slots.values() if s.state is EngineState.UP]
        self._largest_cap = max(caps, default=0)

    def add_engine(self, engine: Engine) -> None:
        """Register ``engine`` at runtime; it must already serve the router's current version.

        An engine whose results report another version is marked down on its first turn.

        A DOWN engine's id may be reused: the new engine replaces the failed one.
        """
        existing = self._slots.get(engine.engine_id)
        if existing is not None and existing.state is not EngineState.DOWN:
            raise DuplicateEngineError(f"engine {engine.engine_id!r} is already registered")
        cap = self._effective_cap(engine)
        if existing is not None:
            del self._slots[engine.engine_id]
        self._register(engine, cap)
        self._dispatch()

    def drain(self, engine_id: str, *, force: bool = False) -> None:
        """Stop placing groups on ``engine_id``; it leaves the registry once its leases end.

        With ``force`` its active leases end at once as DRAINED (callers see a retryable
        :class:`LeaseDrainedError`) and the engine leaves now. Await :meth:`wait_drained`.
        """
        slot = self._slot(engine_id)
        if slot.state is EngineState.UP:
            self._index.remove(engine_id)
        slot.state = EngineState.DRAINING  # a DOWN engine holds no leases: it leaves at once
        if force:
            for lease in list(slot.leases.values()):
                self._end(lease, LeaseState.DRAINED)
        self._maybe_forget(slot)
        self._recompute_largest_cap()
        self._dispatch()

    async def wait_drained(self, engine_id: str) -> None:
        """Return once ``engine_id`` (being drained) has left the registry."""
        slot = self._slots.get(engine_id)
        if slot is not None:
            await slot.drained.wait()

    def mark_down(self, engine_id: str, reason: str = "marked down") -> None:
        """Take a failed engine out: its leases end as FAILED and it takes no new groups."""
        slot = self._slot(engine_id)
        if slot.state is EngineState.DOWN:
            return
        if slot.state is EngineState.UP:
            self._index.remove(engine_id)
            slot.state = EngineState.DOWN  # a DRAINING engine stays DRAINING and leaves below
        for lease in list(slot.leases.values()):
            self._end(lease, LeaseState.FAILED, engine_failed=True)
        self._maybe_forget(slot)
        self._recompute_largest_cap()
        self._dispatch()

    def _maybe_forget(self, slot: _Slot) -> None:
        engine_id = slot.engine.engine_id
        if (
            slot.state is EngineState.DRAINING
            and not slot.leases
            and self._slots.get(engine_id) is slot
        ):
            del self._slots[engine_id]
            slot.drained.set()

    # ----------------------------------------------------------------- leasing
    def _check_size(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidGroupSizeError(f"a group needs at least one rollout, got {size!r}")
        if self._largest_cap == 0:
            raise NoEngineAvailableError("every engine is down or draining")
        if size > self._largest_cap:
            raise GroupTooLargeError(size, self._largest_cap)

    def _place(self, group_id: str, size: int) -> Lease | None:
        engine_id = self._index.choose(group_id, size)
        if engine_id is None:
            return None
        slot = self._slots[engine_id]
        lease = Lease(self, self._next_lease_id, group_id, engine_id, size)
        self._next_lease_id += 1
        slot.leases[lease.lease_id] = lease
        slot.resident += size
        self._index.set_load(engine_id, slot.resident)
        self._granted += 1
        self._counts[LeaseState.ACTIVE] += 1
        return lease

    def try_acquire(self, group_id: str, size: int) -> Lease | None:
        """Lease a group now if the policy places it, else return ``None`` (never waits).

        Returns ``None`` while paused or while earlier callers are queued (no barging past the
        FIFO). Raises :class:`InvalidGroupSizeError`, :class:`GroupTooLargeError` or
        :class:`NoEngineAvailableError` for a group that cannot ever be placed now.
        """
        self._check_size(size)
        if self._paused or self._waiters:
            return None
        return self._place(group_id, size)

    async def acquire(self, group_id: str, size: int) -> Lease:
        """Lease a group of ``size`` rollouts, waiting in FIFO order while no engine fits."""
        lease = self.try_acquire(group_id, size)
        if lease is not None:
            return lease
        waiter = _Waiter(group_id, size, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            return await waiter.future
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if waiter.future.done() and not waiter.future.cancelled():
                granted = waiter.future.result()  # granted as we were cancelled: give it back
                if granted.active:
                    self._end(granted, LeaseState.FAILED)
            self._dispatch()
            raise

    @contextlib.asynccontextmanager
    async def lease(self, group_id: str, size: int) -> AsyncIterator[Lease]:
        """``async with router.lease(g, n) as lease:`` — COMPLETED on exit, FAILED on error."""
        lease = await self.acquire(group_id, size)
        try:
            yield lease
        except BaseException:
            if lease.active:
                self._end(lease, LeaseState.FAILED)
            raise
        if lease.active:
            self._end(lease, LeaseState.COMPLETED)

    def release(self, lease: Lease, outcome: LeaseState = LeaseState.COMPLETED) -> None:
        """End an ACTIVE lease as COMPLETED or FAILED and free its resident slots.

        Raises :class:`LeaseClosedError` (counters untouched) if the lease already ended or
        belongs to another router, and :class:`InvalidArgumentError` for an outcome other than
        COMPLETED/FAILED.
        """
        if outcome not in (LeaseState.COMPLETED, LeaseState.FAILED):
            raise InvalidArgumentError(
                f"a caller releases as COMPLETED or FAILED, not {outcome.value}"
            )
        if lease._router is not self:
            raise LeaseClosedError(f"{lease!r} belongs to another router")
        if not lease.active:
            raise LeaseClosedError(f"{lease!r} already ended as {lease.state.value}")
        self._end(lease, outcome)

    def _end(self, lease: Lease, state: LeaseState, *, engine_failed: bool = False) -> None:
        slot = self._slots[lease.engine_id]
        del slot.leases[lease.lease_id]
        slot.resident -= lease.size
        lease._end(state, engine_failed=engine_failed)
        self._counts[LeaseState.ACTIVE] -= 1
        self._counts[state] += 1
        if slot.state is EngineState.UP:
            self._index.set_load(lease.engine_id, slot.resident)
            self._dispatch()
        self._maybe_forget(slot)

    def _dispatch(self) -> None:
        """Grant queued callers in FIFO order while the head fits somewhere."""
        while self._waiters and not self._paused:
            head = self._waiters[0]
            if head.future.done():
                self._waiters.popleft()
                continue
            try:
                self._check_size(head.size)
            except (GroupTooLargeError, NoEngineAvailableError) as exc:
                self._waiters.popleft()
                head.future.set_exception(exc)
                continue
            lease = self._place(head.group_id, head.size)
            if lease is None:
                return  # head-of-line waits: strict FIFO fairness
            self._waiters.popleft()
            head.future.set_result(lease)

    # ----------------------------------------------------------------- generation
    async def _generate(self, lease: Lease, request: GenerateRequest) -> GenerateResult:
        while self._paused:
            await self._resumed.wait()
        self._raise_if_ended(lease)
        started_at = self._version
        slot = self._slots[lease.engine_id]
        slot.running += 1
        slot.idle.clear()
        try:
            result = await slot.engine.generate(request)
        except Exception as exc:
            if self._slots.get(lease.engine_id) is slot:
                self.mark_down(lease.engine_id, f"generate raised {exc!r}")
            raise EngineFailedError(lease.engine_id, repr(exc)) from exc
        finally:
            slot.running -= 1
            if slot.running == 0:
                slot.idle.set()
        self._raise_if_ended(lease)
        reason = self._version_mismatch(result, started_at)
        if reason is not None:
            # An engine that missed a refresh samples from stale weights; one ahead of every
            # published version reports weights nobody sent it. Either way it is broken.
            self.mark_down(lease.engine_id, reason)
            raise EngineFailedError(lease.engine_id, reason)
        lease.versions[request.rollout_index].extend(result.token_versions)
        return result

    def _version_mismatch(self, result: GenerateResult, started_at: int) -> str | None:
        """Why ``result``'s per-token versions cannot be right, or ``None`` when they can.

        A turn that started when the router was at ``started_at`` has every token at or above
        it (a refresh completed before the call reached every engine) and none above the newest
        version published so far (the one being refreshed to, while a refresh runs).
        """
        newest = self._target_version if self._refreshing else self._version
        first = result.token_versions[0] if result.token_versions else result.policy_version
        if first < started_at:
            return f"reported policy version {first}, router is at {started_at}"
        if result.policy_version > newest:
            return f"reported policy version {result.policy_version}, newest published {newest}"
        return None

    def _raise_if_ended(self, lease: Lease) -> None:
        if lease.state is LeaseState.DRAINED:
            raise LeaseDrainedError(f"{lease!r}: engine {lease.engine_id!r} was drained")
        if lease.engine_failed:
            raise EngineFailedError(lease.engine_id, "engine was marked down")
        if not lease.active:
            raise LeaseClosedError(f"{lease!r} already ended as {lease.state.value}")

    # ----------------------------------------------------------------- refresh
    async def refresh(
        self,
        weights_ref: str,
        version: int,
        *,
        invalidate_caches: bool = True,
        mode: RefreshMode | str = RefreshMode.DRAIN,
        turn_timeout: float | None = None,
        refresh_timeout: float | None = None,
    ) -> RefreshReport:
        """Publish new weights: pause admission → refresh every engine concurrently → resume.

        Pausing blocks new leases and new generate calls (turns) in both modes. ``mode``:

        * ``"drain"`` — wait for every running generate call to return first, so no generate
          runs on any engine between pause and resume (every turn has one version).
        * ``"inflight"`` (Arctic-SWE §3.3) — call ``engine.refresh`` while turns are in flight:
          each engine pauses its running sequences in place, loads the weights, invalidates its
          caches and re-prefills them, and resumes; a turn's tokens after that point carry the
          new version in :attr:`GenerateResult.token_versions`. No long turn holds the others
          paused.

        Each UP or DRAINING engine gets ``refresh(weights_ref, version, invalidate_caches=…)``;
        one that raises, or has not returned after ``refresh_timeout`` seconds, is marked down
        (its leases FAILED, reported in ``failed``). ``invalidate_caches=False`` is the ablation
        that keeps stale caches. With ``turn_timeout`` (seconds, drain mode), an engine whose
        running turns have not returned by then is marked down instead of holding every engine
        paused behind a hung turn.
        """
        chosen = _refresh_mode(mode)
        for name, value in (("turn_timeout", turn_timeout), ("refresh_timeout", refresh_timeout)):
            if value is not None and value < 0:
                raise InvalidArgumentError(f"{name} must be >= 0, got {value}")
        if self._refreshing:
            raise RefreshInProgressError("a refresh is already running")
        if version <= self._version:
            raise StaleVersionError(f"version {version} is not newer than {self._version}")
        self._refreshing = True
        self._target_version = version
        self._paused = True
        self._resumed.clear()
        started = time.perf_counter()
        try:
            failed: list[str] = []
            if chosen is RefreshMode.DRAIN:
                failed = await self._wait_for_running_turns(turn_timeout)
            slots = [s for s in self._slots.values() if s.state is not EngineState.DOWN]
            outcomes = await asyncio.gather(
                *(
                    _bounded(
                        s.engine.refresh(weights_ref, version, invalidate_caches=invalidate_caches),
                        refresh_timeout,
                    )
                    for s in slots
                ),
                return_exceptions=True,
            )
            for slot, outcome in zip(slots, outcomes, strict=True):
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                if isinstance(outcome, BaseException):
                    failed.append(slot.engine.engine_id)
                    self.mark_down(slot.engine.engine_id, f"refresh raised {outcome!r}")
            self._version = version
        finally:
            self._paused = False
            self._refreshing = False
            self._resumed.set()
            self._dispatch()
        refreshed = tuple(s.engine.engine_id for s in slots if s.engine.engine_id not in failed)
        return RefreshReport(
            version=version,
            refreshed=refreshed,
            failed=tuple(failed),
            invalidated_caches=invalidate_caches,
            paused_seconds=time.perf_counter() - started,
            mode=chosen,
        )

    async def _wait_for_running_turns(self, timeout: float | None) -> list[str]:
        """Wait until no generate call runs on a live engine; mark down the ones still busy."""
        busy = [s for s in self._slots.values() if s.state is not EngineState.DOWN]
        waits = [asyncio.ensure_future(s.idle.wait()) for s in busy if s.running]
        if waits:
            try:
                await asyncio.wait(waits, timeout=timeout)
            finally:  # also on cancellation of the refresh itself
                for task in waits:
                    task.cancel()
        hung = [s.engine.engine_id for s in busy if s.running]
        for engine_id in hung:
            self.mark_down(engine_id, f"turns still running after {timeout} s at refresh")
        return hung

    # ----------------------------------------------------------------- monitoring
    def snapshot(self) -> RouterSnapshot:
        """Per-engine load and lease counters (O(E))."""
        engines = tuple(
            EngineSnapshot(
                engine_id=engine_id,
                state=slot.state,
                cap=slot.cap,
                resident=slot.resident,
                leases=len(slot.leases),
                engine_in_flight=slot.engine.in_flight,
            )
            for engine_id, slot in self._slots.items()
        )
        return RouterSnapshot(
            engines=engines,
            waiting=self.waiting,
            paused=self._paused,
            version=self._version,
            granted=self._granted,
            active=self._counts[LeaseState.ACTIVE],
            completed=self._counts[LeaseState.COMPLETED],
            failed=self._counts[LeaseState.FAILED],
            drained=self._counts[LeaseState.DRAINED],
        )
