"""A :class:`Lease`: one group of n rollouts placed on one engine, from grant to end.

Lifecycle (every lease ends exactly once)::

    ACTIVE ──release(COMPLETED)──▶ COMPLETED      the group finished normally
       │  ──release(FAILED)─────▶ FAILED         the caller gave up on it
       │  ──engine failure──────▶ FAILED         router marked the engine down (retryable)
       └──drain(force=True)─────▶ DRAINED        engine removed under the lease (retryable)

While ACTIVE the lease's ``size`` rollouts count against its engine's resident cap, whether they
are decoding or waiting on a tool: multi-turn sequences keep their cache resident between turns.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from load_router._engine import GenerateRequest, GenerateResult
from load_router._errors import InvalidArgumentError
from load_router._versions import GroupRecord, TokenVersions

if TYPE_CHECKING:
    from load_router._router import Router


class LeaseState(enum.Enum):
    """Where a lease is in its lifecycle."""

    ACTIVE = "active"
    COMPLETED = "completed"
    FAILED = "failed"
    DRAINED = "drained"


class Lease:
    """A group leased to one engine. Obtain from :meth:`Router.acquire`; never construct directly.

    ``versions[i]`` records the policy version of every token generated for rollout ``i`` through
    :meth:`generate`; :meth:`record` turns them into the :class:`GroupRecord` the trainer screens.
    """

    __slots__ = (
        "_engine_failed",
        "_router",
        "_state",
        "_versions",
        "engine_id",
        "group_id",
        "lease_id",
        "size",
    )

    def __init__(
        self, router: Router, lease_id: int, group_id: str, engine_id: str, size: int
    ) -> None:
        self._router = router
        self.lease_id = lease_id
        self.group_id = group_id
        self.engine_id = engine_id
        self.size = size
        self._state = LeaseState.ACTIVE
        self._engine_failed = False
        self._versions = tuple(TokenVersions() for _ in range(size))

    @property
    def state(self) -> LeaseState:
        return self._state

    @property
    def active(self) -> bool:
        return self._state is LeaseState.ACTIVE

    @property
    def versions(self) -> tuple[TokenVersions, ...]:
        return self._versions

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """Sample one turn for rollout ``request.rollout_index`` on this lease's engine.

        Waits while the router is paused for a refresh. Raises :class:`EngineFailedError` or
        :class:`LeaseDrainedError` (both retryable) if the engine fails or is force-drained, and
        :class:`LeaseClosedError` if the lease already ended.
        """
        if request.rollout_index >= self.size:
            raise InvalidArgumentError(
                f"rollout_index {request.rollout_index} out of range for a group of {self.size}"
            )
        return await self._router._generate(self, request)

    def release(self, outcome: LeaseState = LeaseState.COMPLETED) -> None:
        """End the lease as COMPLETED (default) or FAILED; see :meth:`Router.release`."""
        self._router.release(self, outcome)

    def record(self) -> GroupRecord:
        """The group's token versions as a :class:`GroupRecord` for :class:`PolicyClock`."""
        return GroupRecord(group_id=self.group_id, rollouts=self._versions)

    @property
    def engine_failed(self) -> bool:
        """True when the lease ended FAILED because its engine failed (retry elsewhere)."""
        return self._engine_failed

    def _end(self, state: LeaseState, *, engine_failed: bool = False) -> None:
        self._state = state
        self._engine_failed = engine_failed

    def __repr__(self) -> str:
        return (
            f"Lease(id={self.lease_id}, group={self.group_id!r}, engine={self.engine_id!r}, "
            f"size={self.size}, state={self._state.value})"
        )
