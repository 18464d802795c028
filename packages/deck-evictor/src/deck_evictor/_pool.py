"""The :class:`TaskPool` protocol: the deck contract a task pool must honour.

:class:`~deck_evictor.Deck` is the reference implementation. The protocol names the surface the
property-testing kit (:mod:`deck_evictor.testing`) drives, so another pool — backed by a
database, sharded, or rewritten from scratch — can be checked against the deck's contract
(Arctic-SWE §3.3, easy-hard eviction):

* ``sample(k)`` hands out ``min(k, active)`` distinct active tasks, never a retired one; within a
  pass no task repeats, and a finished pass covered every task that stayed active through it;
* ``record`` retires a task exactly when the eviction rules say so, and late groups for retired
  tasks change no status; every recorded rollout is counted once in the training statistics;
* replay probes (``replay_schedule`` / ``record_replay``) touch retired tasks only, never leak into
  training statistics, and re-activate exactly when the replay policy says so;
* persisting and reloading the pool changes nothing observable, and it continues the same draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from deck_evictor._config import EvictionRules, ReplayPolicy
from deck_evictor._records import Draw, ReplayOutcome, Retirement, TaskStats


class TaskPool(Protocol):
    """A task pool with easy/hard eviction and replay probes (:class:`~deck_evictor.Deck` is one).

    The semantics of every member are those documented on :class:`~deck_evictor.Deck`;
    :func:`deck_evictor.testing.deck_contract` checks them.
    """

    @property
    def task_ids(self) -> tuple[str, ...]: ...

    @property
    def active_ids(self) -> tuple[str, ...]: ...

    @property
    def active_count(self) -> int: ...

    @property
    def retired(self) -> Mapping[str, Retirement]: ...

    @property
    def update(self) -> int: ...

    @property
    def pass_index(self) -> int: ...

    @property
    def replay_policy(self) -> ReplayPolicy: ...

    def advance(self, to: int | None = None) -> int: ...

    def sample(self, k: int) -> Draw: ...

    def record(self, task_id: str, successes: int, n: int) -> Retirement | None: ...

    def replay_schedule(self, update: int | None = None) -> tuple[str, ...]: ...

    def record_replay(self, task_id: str, successes: int, n: int) -> ReplayOutcome: ...

    def stats(self, task_id: str) -> TaskStats: ...


class MakePool(Protocol):
    """Builds a fresh pool: ``make_pool(task_ids, rules=..., replay=..., seed=...)``.

    The :class:`~deck_evictor.Deck` class itself is one.
    """

    def __call__(
        self, task_ids: Sequence[str], *, rules: EvictionRules, replay: ReplayPolicy, seed: int
    ) -> TaskPool: ...
