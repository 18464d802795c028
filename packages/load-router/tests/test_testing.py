"""The public property-testing kit: passes the real router, catches broken schedulers for the
stated reason, refuses bad arguments, and stays out of ``import load_router``."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from load_router import (
    Engine,
    InvalidArgumentError,
    Lease,
    LeaseState,
    PlacementIndex,
    PlacementOnlyEngine,
    RefreshMode,
    RefreshReport,
    RoundRobin,
    Router,
    RouterSnapshot,
    Scheduler,
    SessionHash,
    SimConfig,
    simulate,
)
from load_router._kit_strategies import _pareto
from load_router.testing import (
    RouterContractViolationError,
    Workload,
    refresh_contract,
    rollout_lengths,
    router_contract,
    sim_configs,
    workloads,
)

QUICK = settings(max_examples=40, stateful_step_count=30, deadline=None, database=None)
# Hunting a known bug: generate only (no shrinking), so a catch costs a fraction of a second.
HUNT = settings(
    max_examples=300,
    stateful_step_count=30,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)


class MeteredScheduler:
    """A third-party scheduler: wraps a Router (no subclassing) and counts its grants."""

    def __init__(self, engines: Sequence[Engine]) -> None:
        self._router = Router(engines)
        self.grants = 0

    @property
    def version(self) -> int:
        return self._router.version

    @property
    def paused(self) -> bool:
        return self._router.paused

    def try_acquire(self, group_id: str, size: int) -> Lease | None:
        lease = self._router.try_acquire(group_id, size)
        self.grants += lease is not None
        return lease

    async def acquire(self, group_id: str, size: int) -> Lease:
        lease = await self._router.acquire(group_id, size)
        self.grants += 1
        return lease

    def release(self, lease: Lease, outcome: LeaseState = LeaseState.COMPLETED) -> None:
        self._router.release(lease, outcome)

    def add_engine(self, engine: Engine) -> None:
        self._router.add_engine(engine)

    def drain(self, engine_id: str, *, force: bool = False) -> None:
        self._router.drain(engine_id, force=force)

    def mark_down(self, engine_id: str, reason: str = "marked down") -> None:
        self._router.mark_down(engine_id, reason)

    async def refresh(
        self, weights_ref: str, version: int, *, mode: RefreshMode | str = RefreshMode.DRAIN
    ) -> RefreshReport:
        return await self._router.refresh(weights_ref, version, mode=mode)

    def snapshot(self) -> RouterSnapshot:
        return self._router.snapshot()


class ForgivingScheduler(MeteredScheduler):
    """Broken: a second release of the same lease is silently ignored."""

    def release(self, lease: Lease, outcome: LeaseState = LeaseState.COMPLETED) -> None:
        if lease.state is LeaseState.ACTIVE:
            super().release(lease, outcome)


class ModeBlindScheduler(MeteredScheduler):
    """Broken: always refreshes in flight, whatever mode the caller asked for."""

    async def refresh(
        self, weights_ref: str, version: int, *, mode: RefreshMode | str = RefreshMode.DRAIN
    ) -> RefreshReport:
        report = await self._router.refresh(weights_ref, version, mode=RefreshMode.INFLIGHT)
        return attrs.evolve(report, mode=RefreshMode(mode))


class _NoCapIndex:
    def __init__(self) -> None:
        self.loads: dict[str, int] = {}

    def add(self, engine_id: str, cap: int) -> None:
        self.loads[engine_id] = 0

    def remove(self, engine_id: str) -> None:
        del self.loads[engine_id]

    def set_load(self, engine_id: str, load: int) -> None:
        self.loads[engine_id] = load

    def choose(self, key: str, size: int) -> str | None:
        return min(self.loads, key=self.loads.__getitem__, default=None)


@attrs.frozen
class IgnoresCap:
    """Broken placement policy: the least-loaded engine, whether or not the group fits."""

    @property
    def name(self) -> str:
        return "ignores-cap"

    def new_index(self) -> PlacementIndex:
        return _NoCapIndex()


def violation(machine: type[RuleBasedStateMachine]) -> str:
    with pytest.raises(RouterContractViolationError) as caught:
        run_state_machine_as_test(machine, settings=HUNT)
    return str(caught.value)


# ---------------------------------------------------------------- the real thing passes
def test_a_third_party_scheduler_over_the_protocol_passes_both_contracts() -> None:
    scheduler: Scheduler[Lease] = MeteredScheduler([PlacementOnlyEngine("e0", 2)])
    assert scheduler.try_acquire("g", 2) is not None
    reference: Scheduler[Lease] = Router([PlacementOnlyEngine("e0", 2)])  # mypy: Router fits
    assert reference.version == 0
    run_state_machine_as_test(router_contract(MeteredScheduler), settings=QUICK)
    run_state_machine_as_test(refresh_contract(MeteredScheduler), settings=QUICK)


# ---------------------------------------------------------------- broken ones are caught
def test_a_policy_that_ignores_the_resident_cap_is_caught() -> None:
    machine = router_contract(lambda engines: Router(engines, policy=IgnoresCap()))
    assert "over its resident cap" in violation(machine)


def test_round_robin_is_not_least_loaded_but_is_work_conserving() -> None:
    machine = router_contract(lambda engines: Router(engines, policy=RoundRobin()))
    assert "not the least-loaded fitting engine" in violation(machine)


def test_session_hash_is_caught_leaving_capacity_idle_under_work_conserving() -> None:
    machine = router_contract(
        lambda engines: Router(engines, policy=SessionHash()), placement="work-conserving"
    )
    assert "waits although" in violation(machine)


def test_a_scheduler_that_forgives_double_release_is_caught() -> None:
    assert "did not raise" in violation(router_contract(ForgivingScheduler))


def test_a_scheduler_that_ignores_the_refresh_mode_is_caught() -> None:
    # The bug shows only when a drain refresh is asked for while turns run (the kit has a rule
    # for exactly that). Today's hypothesis finds it in well under a second; 6.100 (the floor)
    # needed up to ~70 s in 8 unseeded hunts, so the budget is large: the hunt stops at the
    # first catch and costs time only when the kit would otherwise miss it.
    with pytest.raises(RouterContractViolationError) as caught:
        run_state_machine_as_test(
            refresh_contract(ModeBlindScheduler), settings=settings(HUNT, max_examples=2000)
        )
    message = str(caught.value)
    assert "drain refresh" in message


# ---------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("factory", [None, 42, Router([PlacementOnlyEngine("e0", 1)])])
def test_a_factory_that_is_not_callable_is_a_config_error(factory: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="make_scheduler must be a callable"):
        router_contract(factory)
    with pytest.raises(InvalidArgumentError, match="make_scheduler must be a callable"):
        refresh_contract(factory)


def test_an_unknown_placement_is_a_config_error() -> None:
    with pytest.raises(InvalidArgumentError, match="placement must be one of"):
        router_contract(Router, placement="fastest")  # type: ignore[arg-type]


def test_bad_strategy_arguments_are_config_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="minimum"):
        rollout_lengths(minimum=0)
    with pytest.raises(InvalidArgumentError, match="minimum"):
        rollout_lengths(minimum=5, maximum=4)
    with pytest.raises(InvalidArgumentError, match="alpha"):
        rollout_lengths(alpha=0.0)
    with pytest.raises(InvalidArgumentError, match="max_groups"):
        workloads(max_groups=0)
    with pytest.raises(InvalidArgumentError, match=r"no field\(s\) \['colour'\]"):
        sim_configs(colour="blue")


# ---------------------------------------------------------------- strategies
@settings(max_examples=30, deadline=None, database=None)
@given(sim_configs())
def test_sim_configs_are_valid_and_the_simulator_honours_their_caps(config: SimConfig) -> None:
    result = simulate(config)
    if config.max_resident_per_engine is not None:
        assert result.peak_engine_rollouts <= config.max_resident_per_engine
    assert all(u.max_lag <= config.max_off_policy for u in result.updates)


@settings(max_examples=20, deadline=None, database=None)
@given(sim_configs(group_size=6, policy="session-hash"))
def test_sim_config_overrides_pin_fields_and_stay_valid(config: SimConfig) -> None:
    assert (config.group_size, config.policy) == (6, "session-hash")
    assert config.max_resident_per_engine is None or config.max_resident_per_engine >= 6


@settings(max_examples=60, database=None)
@given(st.lists(rollout_lengths(minimum=3, maximum=500), min_size=1))
def test_rollout_lengths_stay_in_bounds(lengths: list[int]) -> None:
    assert all(3 <= n <= 500 for n in lengths)


def test_rollout_lengths_follow_the_pareto_quantiles() -> None:
    # Float64 reference: the Pareto(alpha) quantile from `minimum` is minimum * (1 - u)**(-1/alpha).
    for u, expected in ((0.0, 2), (0.5, math.floor(2 * 2 ** (1 / 1.2))), (0.99, 92)):
        assert _pareto(u, 2, 1.2, 10**6) == expected
    assert _pareto(1 - 1e-12, 2, 1.2, 500) == 500  # clipped at maximum


def test_hypothesis_reaches_the_long_tail_and_shrinks_to_its_edge() -> None:
    longest = find(
        rollout_lengths(maximum=10**6), lambda n: n >= 1000, settings=settings(database=None)
    )
    assert 1000 <= longest <= 1030  # shrinks toward short rollouts: the smallest long one


@settings(max_examples=40, deadline=None, database=None)
@given(workloads(max_group_size=3), st.integers(1, 3))
def test_a_heavy_tailed_workload_runs_to_completion_under_the_cap(
    workload: Workload, engines: int
) -> None:
    """Tick-driven: start waiting groups (FIFO), age running rollouts by one tick each tick."""
    cap = max(3, workload.largest_group)
    router = Router([PlacementOnlyEngine(f"e{i}", cap) for i in range(engines)])
    pending = list(enumerate(workload.groups))
    running: list[tuple[Lease, int]] = []  # (lease, ticks left = the group's longest rollout)
    for _ in range(sum(max(g) for g in workload.groups) + 1):
        while pending and (lease := router.try_acquire(f"g{pending[0][0]}", len(pending[0][1]))):
            running.append((lease, max(pending.pop(0)[1])))
        assert all(e.resident <= e.cap for e in router.snapshot().engines)
        for lease, _ in [r for r in running if r[1] <= 1]:
            lease.release()
        running = [(lease, left - 1) for lease, left in running if left > 1]
        if not pending and not running:
            break
    assert not pending
    assert not running
    assert router.snapshot().completed == len(workload.groups)


# ---------------------------------------------------------------- import hygiene
def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_importing_load_router_does_not_import_hypothesis() -> None:
    done = run_python("import sys, load_router; print('hypothesis' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_kit_without_hypothesis_names_the_extra() -> None:
    done = run_python("import sys; sys.modules['hypothesis'] = None; import load_router.testing")
    assert done.returncode != 0
    assert "ImportError" in done.stderr
    assert "pip install 'load-router[testing]'" in done.stderr


def test_the_router_class_itself_is_a_factory() -> None:
    run_state_machine_as_test(router_contract(Router), settings=QUICK)


# ---------------------------------------------------------------- from outside the repository
USER_TESTS = '''
"""A user's own test module: their placement policy under the router contract."""
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from load_router import Router
from load_router.testing import RouterContractViolationError, refresh_contract, router_contract


class FewestGroupsIndex:
    """The user's policy: the engine with the fewest resident rollouts that fits (by hand)."""

    def __init__(self, respect_cap=True):
        self.loads, self.caps, self.respect_cap = {}, {}, respect_cap

    def add(self, engine_id, cap):
        self.loads[engine_id], self.caps[engine_id] = 0, cap

    def remove(self, engine_id):
        del self.loads[engine_id], self.caps[engine_id]

    def set_load(self, engine_id, load):
        self.loads[engine_id] = load

    def choose(self, key, size):
        fits = [e for e in self.loads if not self.respect_cap or self.loads[e] + size <= self.caps[e]]
        return min(fits, key=lambda e: self.loads[e], default=None)


class FewestGroups:
    name = "fewest-groups"

    def __init__(self, respect_cap=True):
        self.respect_cap = respect_cap

    def new_index(self):
        return FewestGroupsIndex(self.respect_cap)


QUICK = settings(max_examples=15, stateful_step_count=20, deadline=None, database=None)
TestMyPolicy = router_contract(lambda engines: Router(engines, policy=FewestGroups())).TestCase
TestMyPolicy.settings = QUICK
TestMyRefresh = refresh_contract(lambda engines: Router(engines, policy=FewestGroups())).TestCase
TestMyRefresh.settings = QUICK


def test_forgetting_the_cap_is_caught():
    broken = router_contract(lambda engines: Router(engines, policy=FewestGroups(False)))
    hunt = settings(QUICK, max_examples=300, phases=[Phase.generate])
    with pytest.raises(RouterContractViolationError, match="over its resident cap"):
        run_state_machine_as_test(broken, settings=hunt)
'''


def test_the_kit_runs_from_a_test_module_outside_the_repository(tmp_path: Path) -> None:
    """``python -I`` in a temporary directory: only the installed packages are importable."""
    # the user's own project configuration: without one, pytest would look upwards for one and
    # could adopt a repository's (with its import mode) when the temporary directory lies inside it
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_my_scheduler.py").write_text(USER_TESTS)
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_my_scheduler.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
