"""The :class:`Scheduler` protocol: what a group scheduler must offer to stand in for the Router.

:class:`~load_router.Router` is the reference implementation. The protocol names the surface the
property-testing kit (:mod:`load_router.testing`) drives, so a third-party scheduler — another
placement rule, a distributed front end, a wrapper that adds metrics — can be checked against the
router's contract (Arctic-SWE §3.3) without subclassing the Router:

* whole groups are leased to one UP engine, never past that engine's resident cap;
* callers that do not fit wait in strict FIFO order, and a waiter that can never fit fails with
  :class:`~load_router.GroupTooLargeError` / :class:`~load_router.NoEngineAvailableError`;
* every lease ends exactly once (released, failed with its engine, or drained), and a second
  release raises :class:`~load_router.LeaseClosedError` without changing any counter;
* :meth:`Scheduler.refresh` pauses admission, moves every engine to the new policy version and
  resumes; leases record the version of every generated token.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from load_router._engine import Engine, GenerateRequest, GenerateResult
from load_router._lease import LeaseState
from load_router._router import RefreshMode, RefreshReport, RouterSnapshot
from load_router._versions import GroupRecord, TokenVersions


class SchedulerLease(Protocol):
    """One leased group as the contract sees it (:class:`~load_router.Lease` implements it)."""

    @property
    def engine_id(self) -> str: ...

    @property
    def group_id(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def state(self) -> LeaseState: ...

    @property
    def versions(self) -> tuple[TokenVersions, ...]: ...

    async def generate(self, request: GenerateRequest) -> GenerateResult: ...

    def record(self) -> GroupRecord: ...


LeaseT = TypeVar("LeaseT", bound=SchedulerLease)


class Scheduler(Protocol[LeaseT]):
    """A group scheduler over :class:`~load_router.Engine` s (:class:`~load_router.Router` is one).

    The semantics of every method are those documented on :class:`~load_router.Router`;
    :func:`load_router.testing.router_contract` checks them.
    """

    @property
    def version(self) -> int: ...

    @property
    def paused(self) -> bool: ...

    def try_acquire(self, group_id: str, size: int) -> LeaseT | None: ...

    async def acquire(self, group_id: str, size: int) -> LeaseT: ...

    def release(self, lease: LeaseT, outcome: LeaseState = ...) -> None: ...

    def add_engine(self, engine: Engine) -> None: ...

    def drain(self, engine_id: str, *, force: bool = False) -> None: ...

    def mark_down(self, engine_id: str, reason: str = ...) -> None: ...

    async def refresh(
        self, weights_ref: str, version: int, *, mode: RefreshMode | str = ...
    ) -> RefreshReport: ...

    def snapshot(self) -> RouterSnapshot: ...
