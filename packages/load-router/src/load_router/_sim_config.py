"""Configuration and result records of the discrete-event simulator (:func:`simulate`)."""

from __future__ import annotations

from typing import Any

import attrs

from load_router._errors import InvalidArgumentError

POLICY_NAMES = ("least-loaded", "session-hash", "round-robin")


def _positive(_inst: object, attr: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise InvalidArgumentError(f"{attr.name} must be > 0, got {value!r}")


def _non_negative(_inst: object, attr: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise InvalidArgumentError(f"{attr.name} must be >= 0, got {value!r}")


def _policy_name(_inst: object, _attr: attrs.Attribute[Any], value: str) -> None:
    if value not in POLICY_NAMES:
        raise InvalidArgumentError(f"policy must be one of {POLICY_NAMES}, got {value!r}")


def _optional_cap(_inst: object, _attr: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value <= 0:
        raise InvalidArgumentError(
            f"max_resident_per_engine must be a positive int or None, got {value}"
        )


@attrs.frozen
class SimConfig:
    """One simulated asynchronous-RL run (times in seconds, lengths in tokens).

    Engines: each decodes its sequences by processor sharing; a decoding sequence advances at
    ``peak_tokens_per_s / (decoding + knee)`` tokens/s, so aggregate throughput saturates at
    ``peak_tokens_per_s``; once more than ``kv_slots`` rollouts are resident the engine thrashes
    (preemption and recompute) and every rate is multiplied by ``(kv_slots/resident)**thrash_exponent``.

    Rollouts: each group samples one of ``tasks`` tasks; a task has a log-normal length factor
    (``task_length_sigma``: hard tasks take more turns for every rollout of every group). The
    number of turns (median ``turns_median`` times task factor) and per-turn ``tokens`` are
    log-normal (heavy-tailed, clipped); tool calls between turns take log-normal ``tool_s``,
    during which the sequence stays resident. Session-hash routing keys on the task (that is
    what keeps its prefix cache warm), so hard tasks pile onto the same engine.

    Trainer: consumes ``groups_per_update`` groups of ``group_size`` rollouts per update (after
    dropping groups whose lag exceeds ``max_off_policy``), trains for ``train_fixed_s +
    train_s_per_token·tokens``, then refreshes every engine: a pause of ``weight_load_s`` plus,
    with ``invalidate_caches``, re-prefilling each resident sequence's context at
    ``prefill_tokens_per_s``. At most ``max_outstanding_groups`` groups are queued, running or
    buffered at once. The first ``warmup_updates`` updates are not measured.
    """

    policy: str = attrs.field(default="least-loaded", validator=_policy_name)
    engines: int = attrs.field(default=6, validator=_positive)
    max_resident_per_engine: int | None = attrs.field(default=40, validator=_optional_cap)
    group_size: int = attrs.field(default=8, validator=_positive)
    groups_per_update: int = attrs.field(default=16, validator=_positive)
    max_outstanding_groups: int = attrs.field(default=64, validator=_positive)
    updates: int = attrs.field(default=40, validator=_positive)
    warmup_updates: int = attrs.field(default=5, validator=_non_negative)
    max_off_policy: int = attrs.field(default=4, validator=_non_negative)
    peak_tokens_per_s: float = attrs.field(default=2400.0, validator=_positive)
    knee: float = attrs.field(default=8.0, validator=_non_negative)
    kv_slots: int = attrs.field(default=64, validator=_positive)
    thrash_exponent: float = attrs.field(default=1.25, validator=_non_negative)
    tasks: int = attrs.field(default=160, validator=_positive)
    task_length_sigma: float = attrs.field(default=0.6, validator=_non_negative)
    turns_median: float = attrs.field(default=10.0, validator=_positive)
    turns_sigma: float = attrs.field(default=0.8, validator=_non_negative)
    max_turns: int = attrs.field(default=100, validator=_positive)
    tokens_median: float = attrs.field(default=250.0, validator=_positive)
    tokens_sigma: float = attrs.field(default=1.0, validator=_non_negative)
    max_tokens_per_turn: int = attrs.field(default=8192, validator=_positive)
    tool_median_s: float = attrs.field(default=2.0, validator=_non_negative)
    tool_sigma: float = attrs.field(default=1.0, validator=_non_negative)
    prompt_tokens: int = attrs.field(default=1500, validator=_non_negative)
    observation_tokens: int = attrs.field(default=200, validator=_non_negative)
    train_fixed_s: float = attrs.field(default=20.0, validator=_non_negative)
    train_s_per_token: float = attrs.field(default=2e-5, validator=_non_negative)
    weight_load_s: float = attrs.field(default=5.0, validator=_non_negative)
    prefill_tokens_per_s: float = attrs.field(default=50000.0, validator=_positive)
    invalidate_caches: bool = True
    seed: int = 0

    def __attrs_post_init__(self) -> None:
        if self.warmup_updates >= self.updates:
            raise InvalidArgumentError("warmup_updates must be smaller than updates")
        cap = self.max_resident_per_engine
        if cap is not None and cap < self.group_size:
            raise InvalidArgumentError(
                f"max_resident_per_engine={cap} is smaller than group_size={self.group_size}: "
                "no engine could ever take a group"
            )


@attrs.frozen
class UpdateRecord:
    """One trainer update of a simulated run."""

    version: int
    kept: int
    dropped: int
    mean_lag: float
    max_lag: int
    mean_offered_lag: float
    waiting_s: float
    training_s: float

    @property
    def update_s(self) -> float:
        return self.waiting_s + self.training_s


@attrs.frozen
class SimResult:
    """Measured figures of one run (over updates after the warm-up).

    ``stale_drops_per_update`` is the paper's "stale drops"; ``mean_lag`` is the mean group lag
    over every group the trainer received (dropped ones included: the age of the experience the
    schedule produced), ``mean_kept_lag``/``max_lag`` are over kept groups only; ``update_s`` splits into ``waiting_s`` (trainer idle, waiting for
    groups) and ``training_s``; ``tokens_per_s`` counts every decoded token (kept or not) over
    the measured window; ``stale_cache_tokens`` counts tokens decoded from a cache built under
    older weights (zero with ``invalidate_caches``).
    """

    config: SimConfig
    updates: tuple[UpdateRecord, ...]
    stale_drops_per_update: float
    mean_lag: float
    mean_kept_lag: float
    max_lag: int
    mean_token_lag: float
    update_s: float
    waiting_s: float
    training_s: float
    tokens_per_s: float
    stale_cache_tokens: int
    refresh_pause_s: float
    peak_engine_rollouts: int
    simulated_s: float

    def summary(self) -> dict[str, Any]:
        """The headline figures as a JSON-ready dict."""
        return {
            "policy": self.config.policy,
            "max_resident_per_engine": self.config.max_resident_per_engine,
            "stale_drops_per_update": round(self.stale_drops_per_update, 3),
            "mean_lag": round(self.mean_lag, 3),
            "mean_kept_lag": round(self.mean_kept_lag, 3),
            "max_lag": self.max_lag,
            "mean_token_lag": round(self.mean_token_lag, 3),
            "update_s": round(self.update_s, 2),
            "waiting_s": round(self.waiting_s, 2),
            "training_s": round(self.training_s, 2),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "stale_cache_tokens": self.stale_cache_tokens,
            "refresh_pause_s": round(self.refresh_pause_s, 2),
            "peak_engine_rollouts": self.peak_engine_rollouts,
            "measured_updates": len(self.updates),
        }
