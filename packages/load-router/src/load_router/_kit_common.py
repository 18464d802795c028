"""Shared pieces of the property-testing kit: the violation error and argument checks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from load_router._engine import Engine
from load_router._errors import InvalidArgumentError
from load_router._scheduler import Scheduler

#: Builds the scheduler under test from the kit's engines (e.g. ``lambda engines: Router(engines)``).
MakeScheduler = Callable[[Sequence[Engine]], Scheduler[Any]]


class RouterContractViolationError(AssertionError):
    """A scheduler broke the router contract; the message says which clause and where."""


def check(condition: bool, message: str) -> None:
    """Raise :class:`RouterContractViolationError` unless ``condition`` (unlike ``assert``, survives ``-O``)."""
    if not condition:
        raise RouterContractViolationError(message)


def validated_factory(make_scheduler: object) -> MakeScheduler:
    if not callable(make_scheduler):
        raise InvalidArgumentError(
            "make_scheduler must be a callable taking a sequence of engines and returning a "
            f"scheduler, got {make_scheduler!r}"
        )
    factory: MakeScheduler = make_scheduler
    return factory


def spin(loop: asyncio.AbstractEventLoop, steps: int) -> None:
    """Let ``steps`` rounds of ready callbacks run (grants resolve, turns advance)."""
    for _ in range(steps):
        loop.run_until_complete(asyncio.sleep(0))
