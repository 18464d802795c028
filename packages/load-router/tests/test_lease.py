"""Lease objects: state, records and argument checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from load_router import (
    EngineFailedError,
    GenerateRequest,
    GroupRecord,
    InvalidArgumentError,
    LeaseClosedError,
    LeaseDrainedError,
    LeaseState,
    NoEngineAvailableError,
    RetryableError,
    Router,
    RouterError,
)


def test_lease_record_and_repr(engines: list[Any]) -> None:
    async def scenario() -> None:
        router = Router(engines[:1])
        lease = await router.acquire("task-1", 2)
        assert lease.active
        assert "group='task-1'" in repr(lease)
        await lease.generate(GenerateRequest(rollout_index=1, prompt_ids=(1,), max_new_tokens=3))
        record = lease.record()
        assert isinstance(record, GroupRecord)
        assert record.group_id == "task-1"
        assert [r.num_tokens for r in record.rollouts] == [0, 3]
        lease.release(LeaseState.FAILED)
        assert lease.state is LeaseState.FAILED
        assert not lease.engine_failed

    asyncio.run(scenario())


def test_rollout_index_must_be_inside_the_group(engines: list[Any]) -> None:
    async def scenario() -> None:
        lease = await Router(engines[:1]).acquire("g", 2)
        with pytest.raises(InvalidArgumentError, match="out of range"):
            await lease.generate(GenerateRequest(rollout_index=5, prompt_ids=(), max_new_tokens=1))

    asyncio.run(scenario())


def test_error_hierarchy() -> None:
    for retryable in (EngineFailedError, LeaseDrainedError, NoEngineAvailableError):
        assert issubclass(retryable, RetryableError)
    assert issubclass(LeaseClosedError, RouterError)
    assert not issubclass(LeaseClosedError, RetryableError)
    assert issubclass(InvalidArgumentError, ValueError)
    assert str(EngineFailedError("e1", "boom")) == "engine 'e1' failed: boom"
