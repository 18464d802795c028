"""The router contract as a hypothesis state machine over a user's :class:`Scheduler`.

The machine drives the scheduler with engine joins, failures, graceful and forced drains, group
acquisitions (immediate and queued), cancellations, releases (and second releases), turns,
refreshes and trainer screening, and keeps a reference model: engines with cap, registration order
and state, the FIFO of waiting callers, and the state and per-token versions of every lease. It
follows the scheduler's placement decisions and checks each one against the contract, so one
machine serves any placement rule; ``placement`` says how strict the rule must be.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from load_router._engine import GenerateRequest
from load_router._errors import (
    GroupTooLargeError,
    InvalidArgumentError,
    LeaseClosedError,
    NoEngineAvailableError,
)
from load_router._kit_common import (
    MakeScheduler,
    check,
    spin,
    validated_factory,
)
from load_router._kit_engines import InstantEngine
from load_router._lease import LeaseState
from load_router._router import EngineState
from load_router._scheduler import Scheduler, SchedulerLease
from load_router._versions import PolicyClock

#: How strict the placement rule under test must be:
#: ``"least-loaded"`` — the engine with the fewest resident rollouts that fits, ties by
#: registration order (Arctic-SWE §3.3); ``"work-conserving"`` — any engine that fits, and a
#: caller waits only while no UP engine fits the head of the queue; ``"any"`` — any engine that
#: fits (a caller may wait while one fits, as with session-hash routing).
Placement = Literal["least-loaded", "work-conserving", "any"]


@dataclass
class _ModelEngine:
    cap: int
    seq: int
    state: EngineState = EngineState.UP
    leases: set[int] = field(default_factory=set)


_PROMPT: Any = (1, 2)  # attrs' tuple converter confuses mypy's generics


class RouterContractMachine(RuleBasedStateMachine):
    """Base machine; build concrete ones with :func:`router_contract`."""

    make_scheduler: MakeScheduler
    placement: Placement = "least-loaded"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.engines: dict[str, _ModelEngine] = {}
        self.next_engine = 0
        self.queue: list[int] = []
        self.sizes: dict[int, int] = {}
        self.tasks: dict[int, asyncio.Task[Any]] = {}
        self.leases: dict[int, SchedulerLease] = {}
        self.state: dict[int, LeaseState] = {}
        self.tokens: dict[int, list[list[int]]] = {}
        self.version = 0
        self.next_rid = 0
        self.scheduler: Scheduler[Any] | None = None

    def teardown(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        spin(self.loop, 1)
        self.loop.close()

    # ---------------------------------------------------------------- model helpers
    @property
    def sched(self) -> Scheduler[Any]:
        assert self.scheduler is not None  # set by the @initialize rule
        return self.scheduler

    def load(self, engine_id: str) -> int:
        return sum(self.sizes[rid] for rid in self.engines[engine_id].leases)

    def up(self) -> dict[str, _ModelEngine]:
        return {k: e for k, e in self.engines.items() if e.state is EngineState.UP}

    def size_error(self, size: int) -> type[Exception] | None:
        largest = max((e.cap for e in self.up().values()), default=0)
        if largest == 0:
            return NoEngineAvailableError
        return GroupTooLargeError if size > largest else None

    def fitting(self, size: int) -> list[str]:
        return [k for k, e in self.up().items() if self.load(k) + size <= e.cap]

    def least_loaded(self, size: int) -> str | None:
        ranked = sorted((self.load(k), self.engines[k].seq, k) for k in self.fitting(size))
        return ranked[0][2] if ranked else None

    def active(self) -> list[int]:
        return sorted(r for r, s in self.state.items() if s is LeaseState.ACTIVE)

    def new_engine(self, capacity: int) -> InstantEngine:
        engine_id = f"e{self.next_engine}"
        self.next_engine += 1
        return InstantEngine(engine_id, capacity, self.version)  # joins at the current version

    def register(self, engine: InstantEngine) -> None:
        """Model the engine with the cap the scheduler reports (at most its capacity)."""
        reported = {e.engine_id: e for e in self.sched.snapshot().engines}
        check(engine.engine_id in reported, f"engine {engine.engine_id} missing from snapshot")
        cap = reported[engine.engine_id].cap
        check(
            0 < cap <= engine.capacity,
            f"engine {engine.engine_id}: cap {cap} not in 1..capacity {engine.capacity}",
        )
        self.engines[engine.engine_id] = _ModelEngine(cap=cap, seq=int(engine.engine_id[1:]))

    # ---------------------------------------------------------------- following grants
    def grant(self, rid: int, lease: SchedulerLease) -> None:
        """Check one placement against the contract, then add it to the model."""
        size, engine_id = self.sizes[rid], lease.engine_id
        check(lease.size == size, f"request {rid} asked for {size} rollouts, got {lease.size}")
        check(lease.group_id == f"group-{rid}", f"request {rid} got {lease.group_id!r}'s lease")
        model = self.engines.get(engine_id)
        check(
            model is not None and model.state is EngineState.UP,
            f"group-{rid} placed on engine {engine_id}, which is "
            f"{'unknown' if model is None else model.state.value}",
        )
        assert model is not None
        load = self.load(engine_id)
        check(
            load + size <= model.cap,
            f"group-{rid} ({size} rollouts) placed on {engine_id} holding {load} of cap "
            f"{model.cap}: over its resident cap",
        )
        if self.placement == "least-loaded":
            expected = self.least_loaded(size)
            check(
                engine_id == expected,
                f"group-{rid} placed on {engine_id} (load {load}), not the least-loaded "
                f"fitting engine {expected} (registration order breaks ties)",
            )
        model.leases.add(rid)
        self.leases[rid] = lease
        self.state[rid] = LeaseState.ACTIVE
        self.tokens[rid] = [[] for _ in range(size)]

    def settle_queue(self) -> None:
        """Fold finished waiters into the model: grants and failures in strict FIFO order."""
        done = [rid for rid in self.queue if self.tasks[rid].done()]
        waiting = [rid for rid in self.queue if not self.tasks[rid].done()]
        if done and waiting:
            check(
                max(done) < min(waiting),
                f"request {max(done)} was served before the earlier waiter {min(waiting)}: "
                "the queue is not FIFO",
            )
        for rid in done:
            self.queue.remove(rid)
            self.resolve(rid)

    def resolve(self, rid: int) -> None:
        task = self.tasks[rid]
        error = task.exception()
        if error is None:
            self.grant(rid, task.result())
            return
        expected = self.size_error(self.sizes[rid])
        check(
            expected is not None and isinstance(error, expected),
            f"request {rid} (size {self.sizes[rid]}) failed with {error!r}; expected "
            f"{'a lease or to wait' if expected is None else expected.__name__}",
        )

    def check_no_idle_capacity(self) -> None:
        if not self.queue or self.sched.paused:
            return
        head = self.queue[0]
        check(
            self.size_error(self.sizes[head]) is None,
            f"request {head} ({self.sizes[head]} rollouts) waits although no UP engine could "
            "ever take it",
        )
        if self.placement == "any":
            return
        fits = self.fitting(self.sizes[head])
        if fits:
            room = fits[0]
            check(
                False,
                f"request {head} ({self.sizes[head]} rollouts) waits although {room} has room "
                f"(load {self.load(room)}, cap {self.engines[room].cap})",
            )

    def settle(self) -> None:
        spin(self.loop, 3)
        self.settle_queue()
        self.check_no_idle_capacity()

    def end(self, rid: int, state: LeaseState) -> None:
        engine_id = self.leases[rid].engine_id
        engine = self.engines[engine_id]
        engine.leases.discard(rid)
        self.state[rid] = state
        if engine.state is EngineState.DRAINING and not engine.leases:
            del self.engines[engine_id]

    # ---------------------------------------------------------------- rules
    @initialize(capacities=st.lists(st.integers(1, 6), min_size=1, max_size=3))
    def build(self, capacities: list[int]) -> None:
        engines = [self.new_engine(capacity) for capacity in capacities]
        self.scheduler = type(self).make_scheduler(engines)
        for engine in engines:
            self.register(engine)

    @precondition(lambda self: len(self.engines) < 5)
    @rule(capacity=st.integers(1, 6))
    def add_engine(self, capacity: int) -> None:
        engine = self.new_engine(capacity)
        self.sched.add_engine(engine)
        self.register(engine)
        self.settle()

    @rule(size=st.integers(1, 6))
    def acquire(self, size: int) -> None:
        rid = self.next_rid
        self.next_rid += 1
        self.sizes[rid] = size
        self.tasks[rid] = self.loop.create_task(self.sched.acquire(f"group-{rid}", size))
        had_waiters = bool(self.queue)
        spin(self.loop, 3)
        self.settle_queue()
        task = self.tasks[rid]
        if not task.done():
            self.queue.append(rid)
            self.check_no_idle_capacity()
            return
        check(not had_waiters or task.exception() is not None, f"request {rid} barged the queue")
        self.resolve(rid)

    @precondition(lambda self: bool(self.queue))
    @rule(pick=st.integers(0, 100))
    def cancel_waiter(self, pick: int) -> None:
        rid = self.queue.pop(pick % len(self.queue))
        self.tasks[rid].cancel()
        self.settle()
        check(self.tasks[rid].cancelled(), f"cancelled request {rid} did not end cancelled")

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 100), completed=st.booleans())
    def release(self, pick: int, completed: bool) -> None:
        rid = self.active()[pick % len(self.active())]
        outcome = LeaseState.COMPLETED if completed else LeaseState.FAILED
        self.sched.release(self.leases[rid], outcome)
        self.end(rid, outcome)
        self.settle()

    @precondition(lambda self: any(s is not LeaseState.ACTIVE for s in self.state.values()))
    @rule(pick=st.integers(0, 100))
    def release_again(self, pick: int) -> None:
        ended = sorted(r for r, s in self.state.items() if s is not LeaseState.ACTIVE)
        rid = ended[pick % len(ended)]
        before = self.sched.snapshot()
        try:
            self.sched.release(self.leases[rid])
        except LeaseClosedError:
            pass
        else:
            check(False, f"releasing the ended lease of request {rid} did not raise")
        check(self.sched.snapshot() == before, "a refused release changed the snapshot")

    @precondition(lambda self: bool(self.engines))
    @rule(pick=st.integers(0, 100))
    def mark_down(self, pick: int) -> None:
        engine_id = sorted(self.engines)[pick % len(self.engines)]
        self.sched.mark_down(engine_id)
        engine = self.engines[engine_id]
        if engine.state is EngineState.UP:
            engine.state = EngineState.DOWN
        for rid in sorted(engine.leases):
            self.end(rid, LeaseState.FAILED)
        self.settle()

    @precondition(lambda self: bool(self.engines))
    @rule(pick=st.integers(0, 100), force=st.booleans())
    def drain(self, pick: int, force: bool) -> None:
        engine_id = sorted(self.engines)[pick % len(self.engines)]
        self.sched.drain(engine_id, force=force)
        engine = self.engines[engine_id]
        engine.state = EngineState.DRAINING
        if force:
            for rid in sorted(engine.leases):
                self.end(rid, LeaseState.DRAINED)
        if engine_id in self.engines and not engine.leases:
            del self.engines[engine_id]
        self.settle()

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 100), rollout=st.integers(0, 11), count=st.integers(1, 4))
    def generate(self, pick: int, rollout: int, count: int) -> None:
        rid = self.active()[pick % len(self.active())]
        index = rollout % self.sizes[rid]
        request = GenerateRequest(rollout_index=index, prompt_ids=_PROMPT, max_new_tokens=count)
        self.loop.run_until_complete(self.leases[rid].generate(request))
        self.tokens[rid][index].extend([self.version] * count)

    @rule()
    def refresh(self) -> None:
        self.version += 1
        report = self.loop.run_until_complete(self.sched.refresh(f"w{self.version}", self.version))
        check(report.version == self.sched.version == self.version, "refresh lost the version")
        check(not self.sched.paused, "the scheduler stayed paused after a refresh")
        self.settle()

    @precondition(lambda self: LeaseState.COMPLETED in self.state.values())
    @rule(cap=st.integers(0, 3))
    def train(self, cap: int) -> None:
        done = sorted(r for r, s in self.state.items() if s is LeaseState.COMPLETED)
        clock = PolicyClock(max_off_policy=cap, start_version=self.version)
        screened = clock.screen([self.leases[r].record() for r in done])
        lags = {}
        for rid in done:
            flat = [v for rollout in self.tokens[rid] for v in rollout]
            lags[f"group-{rid}"] = self.version - min(flat) if flat else 0
        dropped = {g.group_id for g in screened.dropped}
        too_old = {g for g, lag in lags.items() if lag > cap}
        check(dropped == too_old, f"off-policy cap {cap} dropped {dropped}, lags are {lags}")
        clock.advance()
        stats = clock.history[-1]
        kept = [lag for lag in lags.values() if lag <= cap]
        check(
            (stats.dropped, stats.max_lag) == (len(too_old), max(kept, default=0)),
            f"update stats {stats} disagree with lags {lags} under cap {cap}",
        )

    # ---------------------------------------------------------------- invariants
    @invariant()
    def snapshot_agrees_with_the_model(self) -> None:
        if self.scheduler is None:
            return
        snapshot = self.sched.snapshot()
        actual = {e.engine_id: e for e in snapshot.engines}
        check(
            set(actual) == set(self.engines), f"engines {sorted(actual)} != {sorted(self.engines)}"
        )
        for engine_id, model in self.engines.items():
            engine = actual[engine_id]
            check(
                engine.resident == self.load(engine_id) <= engine.cap == model.cap,
                f"engine {engine_id}: resident {engine.resident}, cap {engine.cap}; the leases "
                f"on it hold {self.load(engine_id)} of cap {model.cap}",
            )
            check(engine.state is model.state, f"engine {engine_id} is {engine.state.value}")
        check(
            snapshot.waiting == len(self.queue),
            f"{snapshot.waiting} waiting, not {len(self.queue)}",
        )
        counts = [sum(s is state for s in self.state.values()) for state in LeaseState]
        reported = [snapshot.active, snapshot.completed, snapshot.failed, snapshot.drained]
        check(reported == counts, f"lease counters {reported} != {counts}")
        check(
            snapshot.granted == len(self.state), "granted != active + completed + failed + drained"
        )

    @invariant()
    def leases_agree_with_the_model(self) -> None:
        for rid, lease in self.leases.items():
            check(lease.state is self.state[rid], f"request {rid}'s lease is {lease.state.value}")
            versions = [r.per_token() for r in lease.versions]
            check(versions == self.tokens[rid], f"request {rid}'s token versions {versions}")
        for rid in self.queue:
            check(not self.tasks[rid].done(), f"request {rid} should still wait")


def router_contract(
    make_scheduler: MakeScheduler, *, placement: Placement = "least-loaded"
) -> type[RouterContractMachine]:
    """A hypothesis state machine checking ``make_scheduler``'s schedulers against the contract.

    ``make_scheduler(engines)`` builds a fresh scheduler over the kit's engines for every run (use
    a lambda to pass options: ``lambda engines: Router(engines, policy=MyPolicy())``). Run the
    result with ``TestMine = router_contract(...).TestCase`` in a test module, or with
    :func:`hypothesis.stateful.run_state_machine_as_test`. A broken clause raises
    :class:`RouterContractViolationError` naming it. Raises :class:`~load_router.InvalidArgumentError` for a
    non-callable factory or an unknown ``placement``.
    """
    factory = validated_factory(make_scheduler)
    if placement not in get_args(Placement):
        raise InvalidArgumentError(
            f"placement must be one of {get_args(Placement)}, got {placement!r}"
        )
    name = getattr(factory, "__name__", "scheduler").strip("<>").replace("-", "_")
    return type(
        f"RouterContract_{name}",
        (RouterContractMachine,),
        {"make_scheduler": staticmethod(factory), "placement": placement},
    )
