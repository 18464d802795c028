"""Per-task mutable state and its columnar (JSON-able) form.

The deck keeps one :class:`TaskRecord` per task, indexed by position. Training counters and
replay counters live side by side but are never mixed: replay probes must not leak into the
training statistics the eviction rules and the curriculum filter read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs

from deck_evictor._config import RetireReason
from deck_evictor._errors import DuplicateTaskError, InvalidConfigError
from deck_evictor._records import ForgettingStat, Retirement, TaskStats

#: Integer counters saved column-wise, in this order.
COUNTERS: tuple[str, ...] = (
    "groups",
    "attempts",
    "successes",
    "consecutive_zero",
    "late_groups",
    "times_retired",
    "last_successes",
    "last_n",
    "retired_update",
    "retired_successes",
    "retired_n",
    "probes",
    "replay_attempts",
    "replay_successes",
    "last_probe_update",
    "last_probe_successes",
    "last_probe_n",
    "consecutive_all_correct",
    "times_reactivated",
)

#: Columns added after the first state files were written: a file without them loads with
#: these derived from the columns it has (see :func:`from_columns`).
LATER_COUNTERS: frozenset[str] = frozenset({"consecutive_all_correct", "times_reactivated"})


@attrs.define(slots=True)
class TaskRecord:
    """Everything the deck knows about one task. ``-1`` marks "never" for update/last fields."""

    task_id: str
    reason: RetireReason | None = None
    groups: int = 0
    attempts: int = 0
    successes: int = 0
    consecutive_zero: int = 0
    late_groups: int = 0
    times_retired: int = 0
    last_successes: int = -1
    last_n: int = -1
    retired_update: int = -1
    retired_successes: int = 0
    retired_n: int = 0
    probes: int = 0
    replay_attempts: int = 0
    replay_successes: int = 0
    last_probe_update: int = -1
    last_probe_successes: int = -1
    last_probe_n: int = -1
    consecutive_all_correct: int = 0
    times_reactivated: int = 0

    def retirement(self) -> Retirement | None:
        if self.reason is None:
            return None
        return Retirement(
            self.task_id, self.reason, self.retired_update, self.retired_successes, self.retired_n
        )

    def stats(self) -> TaskStats:
        return TaskStats(
            task_id=self.task_id,
            retirement=self.retirement(),
            groups=self.groups,
            attempts=self.attempts,
            successes=self.successes,
            consecutive_zero=self.consecutive_zero,
            late_groups=self.late_groups,
            times_retired=self.times_retired,
            consecutive_all_correct=self.consecutive_all_correct,
            times_reactivated=self.times_reactivated,
        )

    def forgetting(self) -> ForgettingStat | None:
        """Replay evidence since the latest retirement, ``None`` if retired-and-unprobed or active."""
        if self.reason is None or self.probes == 0:
            return None
        return ForgettingStat(
            task_id=self.task_id,
            reason=self.reason,
            retired_update=self.retired_update,
            retired_rate=self.retired_successes / self.retired_n,
            probes=self.probes,
            replay_attempts=self.replay_attempts,
            replay_successes=self.replay_successes,
            last_probe_update=self.last_probe_update,
        )

    def retire(self, reason: RetireReason, update: int, successes: int, n: int) -> Retirement:
        self.reason = reason
        self.retired_update = update
        self.retired_successes = successes
        self.retired_n = n
        self.times_retired += 1
        # Replay evidence is about *this* retirement; a re-retired task starts a fresh record.
        self.probes = self.replay_attempts = self.replay_successes = 0
        self.last_probe_update = self.last_probe_successes = self.last_probe_n = -1
        retirement = self.retirement()
        assert retirement is not None
        return retirement

    def add_group(self, wins: int, size: int) -> None:
        """Count one training group (active or late) and extend or restart both streaks."""
        self.groups += 1
        self.attempts += size
        self.successes += wins
        self.last_successes, self.last_n = wins, size
        self.consecutive_zero = self.consecutive_zero + 1 if wins == 0 else 0
        self.consecutive_all_correct = self.consecutive_all_correct + 1 if wins == size else 0

    def reactivate(self) -> None:
        """Back to the active deck: cumulative counts are kept (they are the task's history);
        both streaks restart, so retirement must be earned again by new groups."""
        self.reason = None
        self.consecutive_zero = 0
        self.consecutive_all_correct = 0
        self.times_reactivated += 1


def validated_ids(task_ids: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """The ids as a list plus their positions; refuses a bare string, non-str, empty, duplicates."""
    if isinstance(task_ids, str | bytes):
        raise InvalidConfigError("task_ids must be an iterable of ids, not a single string")
    ids = list(task_ids)
    if not set(map(type, ids)) <= {str} or "" in ids:
        bad = next(t for t in ids if not isinstance(t, str) or not t)
        raise InvalidConfigError(f"task ids must be non-empty str, got {bad!r}")
    index = {task_id: i for i, task_id in enumerate(ids)}
    if len(index) != len(ids):
        dupes = sorted(t for t, count in Counter(ids).items() if count > 1)
        raise DuplicateTaskError(f"duplicate task ids: {dupes[:10]!r} ({len(dupes)} in all)")
    return ids, index


def to_columns(records: list[TaskRecord]) -> dict[str, Any]:
    """Column-wise JSON-able form: one list per field, compact and fast to (de)serialise."""
    columns: dict[str, Any] = {
        "task_ids": [r.task_id for r in records],
        "reason": [None if r.reason is None else r.reason.value for r in records],
    }
    for name in COUNTERS:
        columns[name] = [getattr(r, name) for r in records]
    return columns


def from_columns(columns: dict[str, Any]) -> list[TaskRecord]:
    """Inverse of :func:`to_columns`; raises ``KeyError``/``TypeError``/``ValueError`` if malformed."""
    task_ids = columns["task_ids"]
    if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
        raise TypeError("task_ids must be a list of str")
    length = len(task_ids)
    reasons = columns["reason"]
    counters = {name: columns[name] for name in COUNTERS if name not in LATER_COUNTERS}
    counters.update({name: columns[name] for name in LATER_COUNTERS if name in columns})
    for name, values in (("reason", reasons), *counters.items()):
        if not isinstance(values, list) or len(values) != length:
            raise ValueError(f"column {name!r} does not match the {length} task ids")
    for name, values in counters.items():
        if not set(map(type, values)) <= {int}:  # exact type: bool is not a counter either
            raise TypeError(f"column {name!r} holds a non-integer")
    parsed = [None if reason is None else RetireReason(reason) for reason in reasons]
    _derive_later_counters(counters, length)
    columns_in_order = [counters[name] for name in COUNTERS]
    # Positional construction follows the field order of TaskRecord, which COUNTERS mirrors.
    return [
        TaskRecord(task_id, reason, *values)
        for task_id, reason, *values in zip(task_ids, parsed, *columns_in_order, strict=True)
    ]


def _derive_later_counters(counters: dict[str, list[int]], length: int) -> None:
    """Fill the columns an older state file lacks: reactivations were not counted (0), and the
    all-correct streak is what the last group shows (1 if it was all-correct, else 0) — exact
    for ``"first_all_correct"``, the only mastery rule such files could hold."""
    if "times_reactivated" not in counters:
        counters["times_reactivated"] = [0] * length
    if "consecutive_all_correct" not in counters:
        counters["consecutive_all_correct"] = [
            int(n > 0 and wins == n)
            for wins, n in zip(counters["last_successes"], counters["last_n"], strict=True)
        ]
