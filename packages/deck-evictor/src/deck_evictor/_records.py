"""Frozen result records returned by the deck: draws, retirements, stats, replay and rewards."""

from __future__ import annotations

import math

import attrs

from deck_evictor._config import RetireReason


@attrs.frozen
class Draw:
    """The tasks handed out by one :meth:`Deck.sample` call.

    Attributes:
        task_ids: distinct active task ids, ``len <= k``, in draw order.
        pass_index: the pass (epoch over the active deck) the last id was taken from.
        new_pass_at: position in ``task_ids`` where a fresh pass (a new permutation) began
            during this draw, ``None`` if the draw stayed within one pass. Ids before it belong
            to the previous pass.
        exhausted: fewer than ``k`` active tasks were available, so the draw is short (empty
            when every task is retired). This is how the deck reports exhaustion.
    """

    task_ids: tuple[str, ...]
    pass_index: int
    new_pass_at: int | None
    exhausted: bool

    @property
    def new_pass(self) -> bool:
        """Whether an epoch boundary was crossed during this draw."""
        return self.new_pass_at is not None


@attrs.frozen
class Retirement:
    """One retirement: which task, why, at which update, and the group that triggered it.

    ``successes``/``n`` are the triggering group for ``EASY``/``HARD`` and the cumulative counts
    for curriculum drops.
    """

    task_id: str
    reason: RetireReason
    update: int
    successes: int
    n: int

    @property
    def rate(self) -> float:
        """Success rate of the evidence that retired the task (1.0 for easy, 0.0 for hard)."""
        return self.successes / self.n if self.n else math.nan


@attrs.frozen
class TaskStats:
    """Training statistics of one task (replay probes are never counted here).

    Attributes:
        task_id: the id.
        retirement: the current retirement, ``None`` while the task is active.
        groups: training groups recorded (including late groups recorded while retired).
        attempts: rollouts over those groups.
        successes: successful rollouts over those groups.
        consecutive_zero: current run of all-zero groups (reset by any success).
        late_groups: groups recorded while the task was already retired (async stragglers).
        times_retired: how often the task has been retired (re-activation makes this > 1).
        consecutive_all_correct: current run of all-correct groups (reset by any failure and by
            re-activation); the ``"mastered"`` rule retires at ``mastered_groups``.
        times_reactivated: how often the task came back from retirement (replay feedback or
            :meth:`Deck.reactivate`).
    """

    task_id: str
    retirement: Retirement | None
    groups: int
    attempts: int
    successes: int
    consecutive_zero: int
    late_groups: int
    times_retired: int
    consecutive_all_correct: int = 0
    times_reactivated: int = 0

    @property
    def active(self) -> bool:
        return self.retirement is None

    @property
    def solve_rate(self) -> float:
        """Cumulative solve rate (``nan`` before the first rollout)."""
        return self.successes / self.attempts if self.attempts else math.nan


@attrs.frozen
class ReplayOutcome:
    """What one replay probe found (returned by :meth:`Deck.record_replay`).

    ``forgetting = retired_rate - replay_rate``: positive when a mastered task got worse since
    retirement; negative for a hard task that became solvable.
    """

    task_id: str
    reason: RetireReason
    update: int
    successes: int
    n: int
    retired_rate: float
    replay_rate: float
    reactivated: bool

    @property
    def probe_rate(self) -> float:
        """Success rate of this probe alone."""
        return self.successes / self.n

    @property
    def forgetting(self) -> float:
        return self.retired_rate - self.replay_rate


@attrs.frozen
class ForgettingStat:
    """Replay evidence about one retired task, cumulative since its latest retirement."""

    task_id: str
    reason: RetireReason
    retired_update: int
    retired_rate: float
    probes: int
    replay_attempts: int
    replay_successes: int
    last_probe_update: int

    @property
    def replay_rate(self) -> float:
        return self.replay_successes / self.replay_attempts

    @property
    def forgetting(self) -> float:
        """``retired_rate - replay_rate``: 0.95 → 0.85 in the paper's 4B run is 0.10 (from 1.0: 0.15)."""
        return self.retired_rate - self.replay_rate


@attrs.frozen
class ReplaySummary:
    """Replay reward over the probed retired tasks of the selected reasons.

    Attributes:
        tasks_probed: retired tasks with at least one probe since their retirement.
        attempts / successes: pooled probe rollouts.
        reward: task-weighted mean replay rate (``nan`` when nothing was probed).
        mean_forgetting: task-weighted mean of ``retired_rate - replay_rate``.
    """

    tasks_probed: int
    attempts: int
    successes: int
    reward: float
    mean_forgetting: float


@attrs.frozen
class AdjustedReward:
    """Deck-level reward with retired tasks imputed, and the same with replay evidence.

    Attributes:
        value: eviction-adjusted reward — mean over scored tasks, where an active task scores its
            latest group's success rate and a retired task its retirement verdict (1.0 easy, the
            paper's imputation; 0.0 hard). Curriculum drops and never-sampled tasks are excluded.
        replay_adjusted: the same, but a retired task that has been probed scores its replay
            rate instead: the honest number, which moves when retired tasks are forgotten.
        active_scored / easy_retired / hard_retired: how many tasks each term covers.
    """

    value: float
    replay_adjusted: float
    active_scored: int
    easy_retired: int
    hard_retired: int


@attrs.frozen
class CurriculumReport:
    """Outcome of the cumulative-solve-rate filter (RFT + DAPO curriculum), ids in deck order."""

    dropped_solved: tuple[str, ...]
    dropped_unsolved: tuple[str, ...]
    kept: tuple[str, ...]
    untested: tuple[str, ...]
