"""Policy-version bookkeeping: which weights produced each token, and how stale a group is.

Arctic-SWE §3.3: in fully asynchronous RL a rollout can span several weight refreshes,
so every generated token carries the version it was sampled under. When the trainer consumes a
group at version ``v``, the group's **lag** is ``v - (oldest token version in the group)``; groups
whose lag exceeds ``max_off_policy`` (default 4) are dropped and counted per update, never
silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from load_router._errors import InvalidArgumentError


class TokenVersions:
    """Run-length record of the policy version of each token of one rollout, in order.

    Stored as ``[(version, count), …]`` so a 100k-token trajectory costs a few entries; versions
    never decrease along a rollout (weights only move forward).
    """

    __slots__ = ("_runs",)

    def __init__(self, runs: Iterable[tuple[int, int]] = ()) -> None:
        self._runs: list[tuple[int, int]] = []
        for version, count in runs:
            self.append(version, count)

    def append(self, version: int, count: int) -> None:
        """Record ``count`` more tokens sampled under ``version``."""
        if version < 0 or count < 0:
            raise InvalidArgumentError(f"version and count must be >= 0, got {version}, {count}")
        if count == 0:
            return
        if self._runs:
            last_version, last_count = self._runs[-1]
            if version < last_version:
                raise InvalidArgumentError(
                    f"policy version went backwards within a rollout: {last_version} -> {version}"
                )
            if version == last_version:
                self._runs[-1] = (version, last_count + count)
                return
        self._runs.append((version, count))

    def extend(self, versions: Iterable[int]) -> None:
        """Record one token per entry of ``versions`` (a turn's per-token versions, in order)."""
        run_version: int | None = None
        count = 0
        for version in versions:
            if version != run_version:
                if run_version is not None:
                    self.append(run_version, count)
                run_version, count = version, 0
            count += 1
        if run_version is not None:
            self.append(run_version, count)

    @property
    def runs(self) -> tuple[tuple[int, int], ...]:
        """The ``(version, count)`` runs, oldest first."""
        return tuple(self._runs)

    @property
    def num_tokens(self) -> int:
        return sum(count for _, count in self._runs)

    @property
    def oldest(self) -> int | None:
        """The version of the first token, or ``None`` for a rollout with no tokens yet."""
        return self._runs[0][0] if self._runs else None

    def per_token(self) -> list[int]:
        """Expanded version of every token (for tests and small audits; O(tokens))."""
        return [version for version, count in self._runs for _ in range(count)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenVersions) and self._runs == other._runs

    def __repr__(self) -> str:
        return f"TokenVersions({self._runs!r})"


def _as_rollouts(rollouts: Iterable[TokenVersions]) -> tuple[TokenVersions, ...]:
    return tuple(rollouts)


@attrs.frozen
class GroupRecord:
    """A finished group as the trainer sees it: its id and the token versions of each rollout."""

    group_id: str
    rollouts: tuple[TokenVersions, ...] = attrs.field(converter=_as_rollouts)

    @property
    def oldest_version(self) -> int | None:
        olds = [r.oldest for r in self.rollouts if r.oldest is not None]
        return min(olds) if olds else None

    @property
    def num_tokens(self) -> int:
        return sum(r.num_tokens for r in self.rollouts)

    def lag_at(self, trainer_version: int) -> int:
        """Group lag when trained at ``trainer_version``: versions since the oldest token."""
        oldest = self.oldest_version
        return 0 if oldest is None else trainer_version - oldest

    def token_lag_sum(self, trainer_version: int) -> int:
        """Sum over tokens of ``trainer_version - token version`` (for token-mean lag)."""
        return sum(
            (trainer_version - version) * count
            for rollout in self.rollouts
            for version, count in rollout.runs
        )


@attrs.frozen
class UpdateLagStats:
    """Lag figures of one trainer update (one consumed batch).

    ``dropped`` counts groups whose lag exceeded the cap; ``mean_lag`` and ``max_lag`` are over
    the *kept* groups (what the optimiser actually saw), ``mean_token_lag`` is token-weighted
    over kept groups. ``mean_offered_lag`` and ``max_offered_lag`` are over every group the
    trainer received, dropped ones included (the age of the experience the system produced).
    """

    version: int
    kept: int
    dropped: int
    mean_lag: float
    max_lag: int
    mean_token_lag: float
    mean_offered_lag: float
    max_offered_lag: int


@attrs.frozen
class Screened:
    """Result of :meth:`PolicyClock.screen`: the groups to train on and the stale ones dropped."""

    kept: tuple[GroupRecord, ...]
    dropped: tuple[GroupRecord, ...]


class PolicyClock:
    """The trainer's policy version plus the off-policy cap and per-update lag statistics.

    Lifecycle per update: ``screen(groups)`` any number of times while assembling the batch
    (each call drops and counts stale groups), then ``advance()`` once the optimiser step is
    taken: it closes the update's :class:`UpdateLagStats` and returns the new version to publish.
    """

    def __init__(self, max_off_policy: int = 4, start_version: int = 0) -> None:
        if max_off_policy < 0:
            raise InvalidArgumentError(f"max_off_policy must be >= 0, got {max_off_policy}")
        if start_version < 0:
            raise InvalidArgumentError(f"start_version must be >= 0, got {start_version}")
        self.max_off_policy = max_off_policy
        self._version = start_version
        self._history: list[UpdateLagStats] = []
        self._reset_current()

    def _reset_current(self) -> None:
        self._kept = 0
        self._dropped = 0
        self._lag_sum = 0
        self._max_lag = 0
        self._token_lag_sum = 0
        self._tokens = 0
        self._max_offered = 0
        self._offered_lag_sum = 0

    @property
    def version(self) -> int:
        """The version the trainer is at (the one the next optimiser step is taken from)."""
        return self._version

    @property
    def history(self) -> tuple[UpdateLagStats, ...]:
        """Closed updates, oldest first."""
        return tuple(self._history)

    @property
    def dropped_this_update(self) -> int:
        return self._dropped

    @property
    def total_dropped(self) -> int:
        return sum(u.dropped for u in self._history) + self._dropped

    def is_stale(self, group: GroupRecord) -> bool:
        return group.lag_at(self._version) > self.max_off_policy

    def screen(self, groups: Sequence[GroupRecord]) -> Screened:
        """Split ``groups`` into kept and dropped (lag > ``max_off_policy``) and count both."""
        kept: list[GroupRecord] = []
        dropped: list[GroupRecord] = []
        for group in groups:
            lag = group.lag_at(self._version)
            if lag < 0:
                raise InvalidArgumentError(
                    f"group {group.group_id!r} has tokens from version {group.oldest_version}, "
                    f"newer than the trainer's {self._version}"
                )
            self._max_offered = max(self._max_offered, lag)
            self._offered_lag_sum += lag
            if lag > self.max_off_policy:
                dropped.append(group)
                continue
            kept.append(group)
            self._lag_sum += lag
            self._max_lag = max(self._max_lag, lag)
            self._token_lag_sum += group.token_lag_sum(self._version)
            self._tokens += group.num_tokens
        self._kept += len(kept)
        self._dropped += len(dropped)
        return Screened(kept=tuple(kept), dropped=tuple(dropped))

    def advance(self) -> int:
        """Close the current update's statistics and move to the next version; return it."""
        offered = self._kept + self._dropped
        self._history.append(
            UpdateLagStats(
                version=self._version,
                kept=self._kept,
                dropped=self._dropped,
                mean_lag=self._lag_sum / self._kept if self._kept else 0.0,
                max_lag=self._max_lag,
                mean_token_lag=self._token_lag_sum / self._tokens if self._tokens else 0.0,
                mean_offered_lag=self._offered_lag_sum / offered if offered else 0.0,
                max_offered_lag=self._max_offered,
            )
        )
        self._reset_current()
        self._version += 1
        return self._version
