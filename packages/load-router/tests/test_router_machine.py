"""Stateful test: the Router against a plain reference model (hypothesis RuleBasedStateMachine).

The model is a few dicts and a list: engines with cap/load/registration order/state, a FIFO of
pending requests, and the state and token versions of every lease. After every step the real
router must agree with it exactly: never over cap, every lease ends exactly once (completed,
failed or drained), least-loaded choice with registration-order ties, strict FIFO grants, and
exact lag accounting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from load_router import (
    EngineState,
    GenerateRequest,
    GenerateResult,
    GroupTooLargeError,
    Lease,
    LeaseClosedError,
    LeaseState,
    NoEngineAvailableError,
    PolicyClock,
    Router,
)


class InstantEngine:
    def __init__(self, engine_id: str, capacity: int, version: int) -> None:
        self._engine_id, self._capacity, self.version = engine_id, capacity, version

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
        return GenerateResult(token_ids=(1,) * n, logprobs=(0.0,) * n, policy_version=self.version)

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.version = version


@dataclass
class ModelEngine:
    cap: int
    seq: int
    state: str = "up"
    load: int = 0
    leases: set[int] = field(default_factory=set)


class RouterMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.engines: dict[str, ModelEngine] = {}
        self.next_engine = 0
        self.queue: deque[int] = deque()
        self.sizes: dict[int, int] = {}
        self.tasks: dict[int, asyncio.Task[Lease]] = {}
        self.expected: dict[int, object] = {}  # rid -> engine id or exception type
        self.state: dict[int, str] = {}  # rid -> lease state (granted requests only)
        self.tokens: dict[int, list[list[int]]] = {}
        self.version = 0
        self.next_rid = 0

    def teardown(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()

    # ---------------------------------------------------------------- helpers
    def step(self) -> None:
        for _ in range(3):
            self.loop.run_until_complete(asyncio.sleep(0))

    def largest_cap(self) -> int:
        return max((e.cap for e in self.engines.values() if e.state == "up"), default=0)

    def size_error(self, size: int) -> type[Exception] | None:
        largest = self.largest_cap()
        if largest == 0:
            return NoEngineAvailableError
        return GroupTooLargeError if size > largest else None

    def choose(self, size: int) -> str | None:
        fitting = [
            (e.load, e.seq, engine_id)
            for engine_id, e in self.engines.items()
            if e.state == "up" and e.load + size <= e.cap
        ]
        return min(fitting)[2] if fitting else None

    def grant(self, rid: int, engine_id: str) -> None:
        engine = self.engines[engine_id]
        engine.load += self.sizes[rid]
        engine.leases.add(rid)
        self.expected[rid] = engine_id
        self.state[rid] = "active"
        self.tokens[rid] = [[] for _ in range(self.sizes[rid])]

    def dispatch(self) -> None:
        while self.queue:
            rid = self.queue[0]
            error = self.size_error(self.sizes[rid])
            if error is not None:
                self.expected[rid] = error
                self.queue.popleft()
                continue
            engine_id = self.choose(self.sizes[rid])
            if engine_id is None:
                return
            self.queue.popleft()
            self.grant(rid, engine_id)

    def end(self, rid: int, state: str) -> None:
        engine_id = self.expected[rid]
        assert isinstance(engine_id, str)
        engine = self.engines[engine_id]
        engine.load -= self.sizes[rid]
        engine.leases.discard(rid)
        self.state[rid] = state
        if engine.state == "up":
            self.dispatch()
        if engine.state == "draining" and not engine.leases:
            del self.engines[engine_id]

    def lease(self, rid: int) -> Lease:
        return self.tasks[rid].result()

    def active(self) -> list[int]:
        return sorted(r for r, s in self.state.items() if s == "active")

    # ---------------------------------------------------------------- rules
    @initialize(caps=st.lists(st.integers(1, 6), min_size=1, max_size=3))
    def build(self, caps: list[int]) -> None:
        engines = [self.new_engine(cap) for cap in caps]
        self.router = Router(engines)

    def new_engine(self, cap: int) -> InstantEngine:
        engine_id = f"e{self.next_engine}"
        self.engines[engine_id] = ModelEngine(cap=cap, seq=self.next_engine)
        self.next_engine += 1
        return InstantEngine(engine_id, cap, self.version)  # joins at the current version

    @precondition(lambda self: len(self.engines) < 5)
    @rule(cap=st.integers(1, 6))
    def add_engine(self, cap: int) -> None:
        self.router.add_engine(self.new_engine(cap))
        self.dispatch()
        self.step()

    @rule(size=st.integers(1, 6))
    def acquire(self, size: int) -> None:
        rid = self.next_rid
        self.next_rid += 1
        self.sizes[rid] = size
        self.tasks[rid] = self.loop.create_task(self.router.acquire(f"group-{rid}", size))
        error = self.size_error(size)
        if error is not None:
            self.expected[rid] = error
        elif self.queue or (engine_id := self.choose(size)) is None:
            self.queue.append(rid)
        else:
            self.grant(rid, engine_id)
        self.step()

    @precondition(lambda self: bool(self.queue))
    @rule(pick=st.integers(0, 100))
    def cancel_waiter(self, pick: int) -> None:
        rid = self.queue[pick % len(self.queue)]
        self.tasks[rid].cancel()
        self.queue.remove(rid)
        self.expected[rid] = asyncio.CancelledError
        self.dispatch()
        self.step()

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 100), completed=st.booleans())
    def release(self, pick: int, completed: bool) -> None:
        rid = self.active()[pick % len(self.active())]
        outcome = LeaseState.COMPLETED if completed else LeaseState.FAILED
        self.router.release(self.lease(rid), outcome)
        self.end(rid, outcome.value)
        self.step()

    @precondition(lambda self: any(s != "active" for s in self.state.values()))
    @rule(pick=st.integers(0, 100))
    def release_again(self, pick: int) -> None:
        ended = sorted(r for r, s in self.state.items() if s != "active")
        rid = ended[pick % len(ended)]
        before = self.router.snapshot()
        try:
            self.router.release(self.lease(rid))
        except LeaseClosedError:
            pass
        else:
            raise AssertionError("a second release must raise LeaseClosedError")
        assert self.router.snapshot() == before

    @precondition(lambda self: bool(self.engines))
    @rule(pick=st.integers(0, 100))
    def mark_down(self, pick: int) -> None:
        engine_id = sorted(self.engines)[pick % len(self.engines)]
        self.router.mark_down(engine_id)
        engine = self.engines[engine_id]
        if engine.state == "up":
            engine.state = "down"
        for rid in sorted(engine.leases):
            self.end(rid, "failed")
        self.dispatch()
        self.step()

    @precondition(lambda self: bool(self.engines))
    @rule(pick=st.integers(0, 100), force=st.booleans())
    def drain(self, pick: int, force: bool) -> None:
        engine_id = sorted(self.engines)[pick % len(self.engines)]
        self.router.drain(engine_id, force=force)
        engine = self.engines[engine_id]
        engine.state = "draining"
        if force:
            for rid in sorted(engine.leases):
                self.end(rid, "drained")
        if engine_id in self.engines and not engine.leases:
            del self.engines[engine_id]
        self.dispatch()
        self.step()

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 100), rollout=st.integers(0, 11), count=st.integers(1, 4))
    def generate(self, pick: int, rollout: int, count: int) -> None:
        rid = self.active()[pick % len(self.active())]
        index = rollout % self.sizes[rid]
        request = GenerateRequest(rollout_index=index, prompt_ids=(1,), max_new_tokens=count)
        self.loop.run_until_complete(self.lease(rid).generate(request))
        self.tokens[rid][index].extend([self.version] * count)

    @rule()
    def refresh(self) -> None:
        self.version += 1
        self.loop.run_until_complete(self.router.refresh(f"w{self.version}", self.version))
        self.step()

    @precondition(lambda self: any(s == "completed" for s in self.state.values()))
    @rule(cap=st.integers(0, 3))
    def train(self, cap: int) -> None:
        done = sorted(r for r, s in self.state.items() if s == "completed")
        clock = PolicyClock(max_off_policy=cap, start_version=self.version)
        screened = clock.screen([self.lease(r).record() for r in done])
        lags = {}
        for rid in done:
            flat = [v for rollout in self.tokens[rid] for v in rollout]
            lags[f"group-{rid}"] = self.version - min(flat) if flat else 0
        assert {g.group_id for g in screened.dropped} == {g for g, lag in lags.items() if lag > cap}
        clock.advance()
        stats = clock.history[-1]
        assert stats.dropped == sum(lag > cap for lag in lags.values())
        kept = [lag for lag in lags.values() if lag <= cap]
        assert stats.max_lag == max(kept, default=0)

    # ---------------------------------------------------------------- invariants
    @invariant()
    def agrees_with_model(self) -> None:
        if not hasattr(self, "router"):
            return
        snapshot = self.router.snapshot()
        actual = {e.engine_id: e for e in snapshot.engines}
        assert set(actual) == set(self.engines)
        for engine_id, model in self.engines.items():
            engine = actual[engine_id]
            assert engine.resident == model.load <= engine.cap == model.cap
            assert engine.state is EngineState(model.state)
        assert snapshot.waiting == len(self.queue)
        counts = {
            s: sum(v == s for v in self.state.values())
            for s in ("active", "completed", "failed", "drained")
        }
        assert (snapshot.active, snapshot.completed, snapshot.failed, snapshot.drained) == tuple(
            counts.values()
        )
        assert snapshot.granted == sum(counts.values()) == len(self.state)
        for rid, expected in self.expected.items():
            task = self.tasks[rid]
            if expected is asyncio.CancelledError:
                continue
            assert task.done(), f"request {rid} should have finished"
            if isinstance(expected, str):
                lease = task.result()
                assert lease.engine_id == expected
                assert lease.state.value == self.state[rid]
                assert [r.per_token() for r in lease.versions] == self.tokens[rid]
            else:
                assert isinstance(expected, type)
                assert isinstance(task.exception(), expected)
        for rid in self.queue:
            assert not self.tasks[rid].done()


RouterMachine.TestCase.settings = settings(
    RouterMachine.TestCase.settings, stateful_step_count=50, max_examples=300
)
TestRouterMachine = RouterMachine.TestCase
