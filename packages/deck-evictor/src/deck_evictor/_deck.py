"""The deck: sample groups, record them, retire easy/hard tasks, probe retired ones, persist.

Lifecycle in a training run (one update ``u``; Arctic-SWE §3.3, easy-hard eviction)::

    deck.advance(u)                         # stamp what follows with update u
    draw = deck.sample(groups_per_update)   # distinct active tasks; draw.exhausted if short
    ...                                     # run n rollouts per task
    deck.record(task_id, successes, n)      # once per finished group; may retire the task
    for task_id in deck.replay_schedule(u): # retired tasks due for a probe this update
        deck.record_replay(task_id, successes, n)   # kept apart from training stats
    deck.save(checkpoint_dir / "deck.state")          # atomically, with the model checkpoint

Groups may finish after their task was retired (asynchronous rollouts): such *late* groups are
counted in the statistics but change no status.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Mapping
from typing import Any

from deck_evictor import _persist
from deck_evictor._config import (
    CurriculumFilter,
    EvictionRules,
    ReplayPolicy,
    RetireReason,
)
from deck_evictor._curriculum import RECIPE_FILTER, split_by_solve_rate
from deck_evictor._errors import (
    InvalidConfigError,
    InvalidResultError,
    NotRetiredError,
    UnknownTaskError,
    UpdateOrderError,
)
from deck_evictor._records import (
    AdjustedReward,
    CurriculumReport,
    Draw,
    ForgettingStat,
    ReplayOutcome,
    ReplaySummary,
    Retirement,
    TaskStats,
)
from deck_evictor._replay import select_probes, should_reactivate, summarise
from deck_evictor._sampler import PassSampler
from deck_evictor._state import deck_from_payload, deck_to_payload
from deck_evictor._tasks import TaskRecord, validated_ids

_PAPER_RULES = EvictionRules()
_DEFAULT_REPLAY = ReplayPolicy()


def _count(value: object, name: str) -> int:
    """An exact non-negative integer (numpy integers fine; bools and floats refused)."""
    if isinstance(value, bool):
        raise InvalidResultError(f"{name} must be an int, got bool {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidResultError(f"{name} must be an int, got {value!r}") from None
    if number < 0:
        raise InvalidResultError(f"{name} must be >= 0, got {number}")
    return int(number)


def _group(successes: object, n: object) -> tuple[int, int]:
    wins, size = _count(successes, "successes"), _count(n, "n")
    if size < 1:
        raise InvalidResultError(f"a group needs n >= 1 rollouts, got n={size}")
    if wins > size:
        raise InvalidResultError(f"successes={wins} exceeds n={size}")
    return wins, size


class Deck:
    """A deck of tasks with easy/hard eviction, replay probes and crash-safe state.

    Args:
        task_ids: distinct non-empty string ids; their order is the deck order.
        rules: eviction rules (paper default: first all-correct group, three all-zero groups).
        replay: replay-probe policy (see :class:`ReplayPolicy`).
        seed: seeds the sampler; the same seed and calls give the same draws.

    Raises:
        DuplicateTaskError: an id appears twice.
        InvalidConfigError: an id is not a non-empty ``str``, or ``seed`` is not a non-negative int.
    """

    def __init__(
        self,
        task_ids: Iterable[str],
        *,
        rules: EvictionRules = _PAPER_RULES,
        replay: ReplayPolicy = _DEFAULT_REPLAY,
        seed: int = 0,
    ) -> None:
        ids, index = validated_ids(task_ids)
        self._install([TaskRecord(task_id) for task_id in ids], ids, index, rules, replay, seed)

    def _install(
        self,
        records: list[TaskRecord],
        ids: list[str],
        index: dict[str, int],
        rules: EvictionRules,
        replay: ReplayPolicy,
        seed: int,
    ) -> None:
        """Set every attribute from validated parts (shared by ``__init__`` and loading)."""
        if not isinstance(rules, EvictionRules) or not isinstance(replay, ReplayPolicy):
            raise InvalidConfigError(
                f"rules/replay must be EvictionRules/ReplayPolicy, got {rules!r}, {replay!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidConfigError(f"seed must be a non-negative int, got {seed!r}")
        self._records = records
        self._ids = ids
        self._index = index
        self._active = [record.reason is None for record in records]
        self._active_count = sum(self._active)
        self._retired: dict[str, Retirement] = {}
        self._rules = rules
        self._replay = replay
        self._seed = seed
        self._update = 0
        self._sampler = PassSampler(len(ids), seed)

    # ---- introspection -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, task_id: object) -> bool:
        try:
            return task_id in self._index
        except TypeError:  # unhashable: certainly not one of our ids
            return False

    def __repr__(self) -> str:
        return (
            f"Deck({len(self)} tasks, {self._active_count} active, {len(self._retired)} retired, "
            f"update={self._update}, pass={self._sampler.pass_index}, rules={self._rules!r})"
        )

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    @property
    def rules(self) -> EvictionRules:
        return self._rules

    @property
    def replay_policy(self) -> ReplayPolicy:
        return self._replay

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def update(self) -> int:
        """The update clock: the update that records and retirements are stamped with."""
        return self._update

    @property
    def active_count(self) -> int:
        return self._active_count

    @property
    def active_ids(self) -> tuple[str, ...]:
        return tuple(r.task_id for r, on in zip(self._records, self._active, strict=True) if on)

    @property
    def reactivations(self) -> int:
        """Returns from retirement over the whole run (replay feedback and manual), all tasks."""
        return sum(record.times_reactivated for record in self._records)

    @property
    def exhausted(self) -> bool:
        """True when no active task is left (everything retired or dropped)."""
        return self._active_count == 0

    @property
    def pass_index(self) -> int:
        """Index of the current pass (``-1`` before the first draw)."""
        return self._sampler.pass_index

    @property
    def retired(self) -> Mapping[str, Retirement]:
        """Currently retired tasks → their retirement (reason, update, evidence), in retirement order."""
        return dict(self._retired)

    def stats(self, task_id: str) -> TaskStats:
        """Training statistics of one task (replay probes excluded)."""
        return self._record_of(task_id).stats()

    def is_active(self, task_id: str) -> bool:
        return self._active[self._index_of(task_id)]

    # ---- the training loop -----------------------------------------------------------------
    def advance(self, to: int | None = None) -> int:
        """Move the update clock to ``to`` (default: the next update) and return it.

        Raises :class:`UpdateOrderError` if ``to`` is before the current update.
        """
        target = self._update + 1 if to is None else _count(to, "update")
        if target < self._update:
            raise UpdateOrderError(f"update clock is at {self._update}; cannot move to {target}")
        self._update = target
        return target

    def sample(self, k: int) -> Draw:
        """Draw up to ``k`` distinct active tasks (seeded, without replacement within a pass).

        Returns a :class:`Draw`; ``draw.exhausted`` reports that fewer than ``k`` active tasks
        exist, ``draw.new_pass`` that an epoch boundary was crossed.
        """
        size = _count(k, "k")
        chosen, new_pass_at = self._sampler.draw(size, self._active, self._active_count)
        return Draw(
            task_ids=tuple([self._ids[i] for i in chosen]),
            pass_index=self._sampler.pass_index,
            new_pass_at=new_pass_at,
            exhausted=len(chosen) < size,
        )

    def record(self, task_id: str, successes: int, n: int) -> Retirement | None:
        """Record one training group (``successes`` of ``n`` rollouts) at the current update.

        Returns the :class:`Retirement` if this group retired the task, else ``None``. A group for
        a task that is already retired is counted (``late_groups``) but changes no status.

        Raises:
            UnknownTaskError: ``task_id`` is not in the deck (nothing is recorded).
            InvalidResultError: ``successes > n``, a negative count, ``n < 1`` or a non-int.
        """
        index = self._index_of(task_id)
        wins, size = _group(successes, n)
        record = self._records[index]
        record.add_group(wins, size)
        if record.reason is not None:
            record.late_groups += 1
            return None
        reason = self._due(record, size)
        if reason is None:
            return None
        return self._retire(index, reason, wins, size)

    def _due(self, record: TaskRecord, size: int) -> RetireReason | None:
        """The rule this group triggers, if any (streaks already include the group)."""
        rules = self._rules
        if size < rules.min_group_size:
            return None
        streak = rules.mastery_streak
        if streak is not None and record.consecutive_all_correct >= streak:
            return RetireReason.EASY
        hard = rules.hard_consecutive_zero
        if hard is not None and record.consecutive_zero >= hard:
            return RetireReason.HARD
        return None

    def _retire(self, index: int, reason: RetireReason, wins: int, size: int) -> Retirement:
        retirement = self._records[index].retire(reason, self._update, wins, size)
        self._active[index] = False
        self._active_count -= 1
        self._retired[retirement.task_id] = retirement
        return retirement

    def reactivate(self, task_id: str) -> None:
        """Put a retired task back into the active deck.

        It is drawn again within the current pass if the pass has not reached it yet, otherwise
        in the next pass. Its training counts are kept; its zero-run and all-correct streak
        restart (so the ``"mastered"`` rule needs a fresh streak), and ``times_reactivated``
        and :attr:`reactivations` count it.

        Raises :class:`NotRetiredError` if the task is active.
        """
        index = self._index_of(task_id)
        record = self._records[index]
        if record.reason is None:
            raise NotRetiredError(f"task {task_id!r} is active; only retired tasks reactivate")
        record.reactivate()
        self._active[index] = True
        self._active_count += 1
        del self._retired[task_id]

    # ---- rewards ---------------------------------------------------------------------------
    def adjusted_reward(self) -> AdjustedReward:
        """Eviction-adjusted reward (retired easy tasks count as 1.0) and its replay-corrected twin.

        See :class:`AdjustedReward` for exactly which tasks each term covers.
        """
        total = honest = 0.0
        active = easy = hard = 0
        for record, on in zip(self._records, self._active, strict=True):
            if on:
                if record.last_n > 0:
                    rate = record.last_successes / record.last_n
                    total, honest, active = total + rate, honest + rate, active + 1
                continue
            if record.reason not in (RetireReason.EASY, RetireReason.HARD):
                continue
            imputed = record.retired_successes / record.retired_n
            stat = record.forgetting()
            total += imputed
            honest += imputed if stat is None else stat.replay_rate
            easy += record.reason is RetireReason.EASY
            hard += record.reason is RetireReason.HARD
        scored = active + easy + hard
        if scored == 0:
            return AdjustedReward(float("nan"), float("nan"), 0, 0, 0)
        return AdjustedReward(total / scored, honest / scored, active, easy, hard)

    # ---- replay probes ---------------------------------------------------------------------
    def replay_schedule(self, update: int | None = None) -> tuple[str, ...]:
        """Retired tasks to re-run at ``update`` (default: the current update) under the policy.

        Pure: it reserves nothing, so calling it twice returns the same ids.
        """
        at = self._update if update is None else _count(update, "update")
        retired = (self._records[self._index[t]] for t in self._retired)
        return select_probes(retired, self._replay, at)

    def record_replay(self, task_id: str, successes: int, n: int) -> ReplayOutcome:
        """Record a replay probe of a retired task; never touches training statistics.

        Updates the task's replay reward and forgetting, and re-activates it when the policy's
        threshold says the retirement verdict no longer holds.

        Raises:
            UnknownTaskError, InvalidResultError: as for :meth:`record`.
            NotRetiredError: the task is active (a probe of an active task is training data).
        """
        index = self._index_of(task_id)
        wins, size = _group(successes, n)
        record = self._records[index]
        if record.reason is None:
            raise NotRetiredError(
                f"task {task_id!r} is active; replay probes are for retired tasks"
            )
        record.probes += 1
        record.replay_attempts += size
        record.replay_successes += wins
        record.last_probe_update = self._update
        record.last_probe_successes, record.last_probe_n = wins, size
        stat = record.forgetting()
        assert stat is not None
        reactivated = should_reactivate(record, wins / size, self._replay)
        if reactivated:
            self.reactivate(task_id)
        return ReplayOutcome(
            task_id=task_id,
            reason=stat.reason,
            update=self._update,
            successes=wins,
            n=size,
            retired_rate=stat.retired_rate,
            replay_rate=stat.replay_rate,
            reactivated=reactivated,
        )

    def forgetting(self) -> dict[str, ForgettingStat]:
        """Per retired task with at least one probe: replay rate and forgetting since retirement."""
        out: dict[str, ForgettingStat] = {}
        for task_id in self._retired:
            stat = self._records[self._index[task_id]].forgetting()
            if stat is not None:
                out[task_id] = stat
        return out

    def replay_reward(
        self, reasons: Iterable[RetireReason | str] = (RetireReason.EASY,)
    ) -> ReplaySummary:
        """Replay reward and mean forgetting over probed retired tasks (default: easy ones)."""
        wanted = tuple(RetireReason(r) for r in reasons)
        return summarise((self._records[self._index[t]] for t in self._retired), wanted)

    # ---- curriculum ------------------------------------------------------------------------
    def apply_curriculum(self, rule: CurriculumFilter = RECIPE_FILTER) -> CurriculumReport:
        """Stage-boundary filter (RFT + DAPO curriculum): drop active tasks above 2/3 cumulative solve rate
        and those never solved. Dropped tasks are retired with a ``CURRICULUM_*`` reason, are not
        probed by default and leave the adjusted-reward denominator.
        """
        counts = (
            (r.task_id, r.successes, r.attempts)
            for r, on in zip(self._records, self._active, strict=True)
            if on
        )
        report = split_by_solve_rate(counts, rule)
        for ids, reason in (
            (report.dropped_solved, RetireReason.CURRICULUM_SOLVED),
            (report.dropped_unsolved, RetireReason.CURRICULUM_UNSOLVED),
        ):
            for task_id in ids:
                index = self._index[task_id]
                record = self._records[index]
                self._retire(index, reason, record.successes, record.attempts)
        return report

    # ---- persistence -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The complete state as JSON-able data (what :meth:`save` writes)."""
        return deck_to_payload(self)

    @classmethod
    def from_state_dict(cls, payload: Mapping[str, Any]) -> Deck:
        """Rebuild a deck from :meth:`state_dict`; raises :class:`CorruptStateError` if malformed."""
        return deck_from_payload(cls, payload)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state atomically: a crash at any instant leaves the old or the new file.

        Raises :class:`ForeignStateError` rather than overwrite a file that is not a deck state.
        """
        _persist.write_state(path, self.state_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Deck:
        """Load a deck saved by :meth:`save`; it continues exactly (same future draws).

        Raises :class:`CorruptStateError` (damaged) or :class:`ForeignStateError` (not ours).
        """
        return cls.from_state_dict(_persist.read_state(path))

    # ---- helpers ---------------------------------------------------------------------------
    def _index_of(self, task_id: str) -> int:
        try:
            return self._index[task_id]
        except (KeyError, TypeError):  # TypeError: an unhashable id is unknown too
            raise UnknownTaskError(task_id) from None

    def _record_of(self, task_id: str) -> TaskRecord:
        return self._records[self._index_of(task_id)]
