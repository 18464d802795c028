"""The refresh contract as a hypothesis state machine over a user's :class:`Scheduler`.

Real asyncio turns sample one token per event-loop step on :class:`SteppedEngine` s that pause
in place during a refresh; the test decides when each weight load finishes and which one fails.
Checked at every step: no turn starts while the scheduler is paused; ``inflight`` refreshes start
on every live engine at once, under the running turns; ``drain`` refreshes start only once no
turn runs anywhere; the report names exactly the live engines (refreshed or failed) and the new
version; per-token versions never decrease inside a turn and every lease records exactly the
versions its turns returned; an UP engine is never ahead of the published version.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from load_router._engine import GenerateRequest, GenerateResult
from load_router._errors import EngineFailedError, RouterError
from load_router._kit_common import MakeScheduler, check, spin, validated_factory
from load_router._kit_engines import SteppedEngine
from load_router._lease import LeaseState
from load_router._router import EngineState, RefreshMode, RefreshReport
from load_router._scheduler import Scheduler, SchedulerLease

_PROMPT: Any = (1, 2)  # attrs' tuple converter confuses mypy's generics


def _request(index: int, n: int) -> GenerateRequest:
    return GenerateRequest(rollout_index=index, prompt_ids=_PROMPT, max_new_tokens=n)


class RefreshContractMachine(RuleBasedStateMachine):
    """Base machine; build concrete ones with :func:`refresh_contract`."""

    make_scheduler: MakeScheduler

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.shared = {"running": 0}
        self.engines: list[SteppedEngine] = []
        self.scheduler: Scheduler[Any] | None = None
        self.leases: list[SchedulerLease] = []
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

    @property
    def sched(self) -> Scheduler[Any]:
        assert self.scheduler is not None  # set by the @initialize rule
        return self.scheduler

    def spin(self, steps: int) -> None:
        spin(self.loop, steps)
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
                check(versions == sorted(versions), f"turn {key}: versions {versions} decrease")
                self.expected.setdefault(key, []).extend(versions)
            else:
                check(isinstance(error, EngineFailedError), f"turn {key} raised {error!r}")
        if self.refresh_task is not None and self.refresh_task.done():
            self.finish_refresh(self.refresh_task.result())

    def finish_refresh(self, report: RefreshReport) -> None:
        self.refresh_task = None
        self.ended_refreshes += 1
        check(report.mode is self.refresh_mode, f"report mode {report.mode}")
        check(
            report.version == self.sched.version == self.version,
            f"refresh to {self.version} reported {report.version}, scheduler at "
            f"{self.sched.version}",
        )
        named = set(report.refreshed) | set(report.failed)
        check(named == self.refresh_live, f"report names {named}, live were {self.refresh_live}")
        check(not self.sched.paused, "still paused after the refresh returned")
        for engine in self.engines:
            if engine.engine_id in report.refreshed:
                check(engine.version == self.version, f"{engine.engine_id} not refreshed")
                if self.refresh_mode is RefreshMode.DRAIN:
                    check(
                        engine.refresh_starts[-1] == (0, 0),
                        f"drain refresh of {engine.engine_id} started under running turns",
                    )

    def engine_state(self, engine: SteppedEngine) -> EngineState:
        snapshot = {e.engine_id: e.state for e in self.sched.snapshot().engines}
        return snapshot.get(engine.engine_id, EngineState.DOWN)

    # ---------------------------------------------------------------- rules
    @initialize(count=st.integers(1, 3))
    def build(self, count: int) -> None:
        self.engines = [SteppedEngine(f"e{i}", self.shared) for i in range(count)]
        self.scheduler = type(self).make_scheduler(self.engines)
        for engine in self.engines:
            engine.scheduler = self.scheduler

    @rule(size=st.integers(1, 3))
    def lease(self, size: int) -> None:
        try:
            lease = self.sched.try_acquire(f"g{len(self.leases)}", size)
        except RouterError:  # every engine down: nothing to lease, which is fine here
            return
        if lease is not None:
            self.leases.append(lease)

    @precondition(lambda self: bool(self.leases))
    @rule(pick=st.integers(0, 50), rollout=st.integers(0, 2), n=st.integers(1, 8))
    def start_turn(self, pick: int, rollout: int, n: int) -> None:
        index = pick % len(self.leases)
        lease = self.leases[index]
        key = (index, rollout % lease.size)
        if key in self.turns or lease.state is not LeaseState.ACTIVE:
            return
        self.turns[key] = self.loop.create_task(lease.generate(_request(key[1], n)))
        self.spin(1)

    @rule(steps=st.integers(1, 6))
    def run(self, steps: int) -> None:
        self.spin(steps)

    @precondition(lambda self: self.refresh_task is None)
    @rule(inflight=st.booleans(), fail=st.integers(-1, 3))
    def start_refresh(self, inflight: bool, fail: int) -> None:
        self.refresh_mode = RefreshMode.INFLIGHT if inflight else RefreshMode.DRAIN
        self.version += 1
        live = [e for e in self.engines if self.engine_state(e) is not EngineState.DOWN]
        self.refresh_live = {e.engine_id for e in live}
        if 0 <= fail < len(live):
            live[fail].fail_next_refresh = True
        refresh = self.sched.refresh(f"w{self.version}", self.version, mode=self.refresh_mode)
        self.refresh_task = self.loop.create_task(refresh)
        spin(self.loop, 1)
        check(self.sched.paused or self.refresh_task.done(), "admission not paused by refresh")
        started = [e for e in live if len(e.refresh_starts) == self.ended_refreshes + 1]
        if self.refresh_mode is RefreshMode.INFLIGHT:
            check(
                {e.engine_id for e in started} == self.refresh_live,
                "an inflight refresh did not start on every live engine at once",
            )
        else:
            check(
                all(e.refresh_starts[-1] == (0, 0) for e in started),
                "a drain refresh started an engine while turns were running",
            )
            check(
                not (self.shared["running"] and started),
                "a drain refresh did not wait for the running turns",
            )
        self.spin(1)

    @precondition(lambda self: self.refresh_task is None and bool(self.turns))
    @rule(inflight=st.booleans(), fail=st.integers(-1, 3))
    def refresh_under_running_turns(self, inflight: bool, fail: int) -> None:
        """A refresh asked for while turns run: where `inflight` and `drain` part ways, and so
        where a scheduler that confuses them shows. A rule of its own, because reaching it by
        chance through `start_refresh` needs a turn still running at that step, which random
        programs rarely arrange (hypothesis 6.100 missed it in 2000 programs)."""
        self.start_refresh(inflight, fail)

    @precondition(lambda self: self.refresh_task is not None)
    @rule(steps=st.integers(0, 4))
    def finish_loading(self, steps: int) -> None:
        for engine in self.engines:
            engine.gate.set()
        self.spin(steps + 3)

    # ---------------------------------------------------------------- invariants
    @invariant()
    def contract_holds(self) -> None:
        if self.scheduler is None:
            return
        for engine in self.engines:
            check(
                engine.started_while_paused == 0,
                f"a turn started on {engine.engine_id} while admission was paused",
            )
        for (index, rollout), versions in self.expected.items():
            lease = self.leases[index]
            if lease.state is LeaseState.ACTIVE:
                recorded = lease.versions[rollout].per_token()
                check(recorded == versions, f"lease {index} rollout {rollout}: {recorded}")
        for engine in self.engines:
            if self.engine_state(engine) is EngineState.UP:
                check(engine.version <= self.version, f"{engine.engine_id} ahead of published")


def refresh_contract(make_scheduler: MakeScheduler) -> type[RefreshContractMachine]:
    """A hypothesis state machine checking the refresh protocol of ``make_scheduler``'s schedulers.

    The engines have capacity 4 each; ``make_scheduler(engines)`` builds a fresh scheduler per
    run. Raises :class:`~load_router.InvalidArgumentError` for a non-callable factory.
    """
    factory = validated_factory(make_scheduler)
    name = getattr(factory, "__name__", "scheduler").strip("<>").replace("-", "_")
    return type(
        f"RefreshContract_{name}",
        (RefreshContractMachine,),
        {"make_scheduler": staticmethod(factory)},
    )
