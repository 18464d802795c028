"""The per-update metrics record and its JSON-lines log (ARCHITECTURE.md §4, step 8).

One line per optimizer step. The log is append-only; on resume it is cut back to the cursor the
checkpoint saved (:meth:`MetricsLog.truncate`), so a crash between a log write and the next
checkpoint never leaves duplicated or orphaned updates.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from arctic_swe._atomic import atomic_write_text


class MetricsError(ValueError):
    """A metrics log that cannot be read (corrupt line, missing figure)."""


@dataclass(frozen=True)
class UpdateMetrics:
    """Every figure of one update (all scalars finite; rates in [0, 1]).

    Reward: ``reward`` is the mean gated reward of the rollouts trained on this update;
    ``adjusted_reward`` the deck's eviction-adjusted reward — *imputed*: a retired mastered task
    counts 1.0 however it would score now, so it is a training-side figure and never part of a
    verdict; ``replay_reward`` the success rate of replay probes of retired tasks (NaN-free:
    ``-1`` when no probe has run yet). Deck: ``retired`` / ``active_tasks`` after the update,
    ``replay_probes`` probes recorded during it and ``reactivated`` of them that found their task
    forgotten and put it back in the pool. Policy: ``entropy``, ``mismatch_kl`` (mean ω - log ω - 1),
    ``masked_frac`` (IcePop). Staleness: ``lag_mean``/``lag_max`` (updates between sampling and
    training), ``stale_dropped``. Time: ``wait_seconds`` (trainer idle, waiting for a batch),
    ``train_seconds`` (compute), ``refresh_seconds``; ``tokens_per_second`` generated tokens per
    second of wall time of this update. Engines: ``lost_rollouts`` / ``released_rollouts``
    (work lost to a failed engine, and re-leased elsewhere), ``engines_up``, ``engine_groups``.
    """

    step: int
    version: int
    wall_seconds: float
    reward: float
    solved_rate: float
    adjusted_reward: float
    replay_reward: float
    entropy: float
    mismatch_kl: float
    masked_frac: float
    loss: float
    grad_norm: float
    lag_mean: float
    lag_max: int
    stale_dropped: int
    dropped_rollouts: int  # rollouts lost to sandbox or engine failures
    requeued_groups: int  # groups re-leased after an engine failure
    groups: int
    rollouts: int
    trainable_tokens: int
    generated_tokens: int
    wait_seconds: float
    train_seconds: float
    refresh_seconds: float
    tokens_per_second: float
    generate_seconds: float  # summed over rollouts (overlapping)
    tool_seconds: float
    grade_seconds: float
    retired: int
    active_tasks: int
    terminations: dict[str, int] = field(default_factory=dict)
    per_task_reward: dict[str, float] = field(default_factory=dict)
    # Engines (logs written before these existed read back with the defaults):
    lost_rollouts: int = 0  # rollouts in flight on an engine when it failed
    released_rollouts: int = 0  # of those, re-leased onto a live engine and rerun
    engines_up: int = 0  # engines taking work at the end of the update
    engine_groups: dict[str, int] = field(default_factory=dict)  # groups finished per engine
    lag_token_mean: float = 0.0  # lag of each trained token at the version it was sampled under
    trainer_world_size: int = 1  # data-parallel ranks of the step (the remote FSDP2 trainer)
    step_started: float = 0.0  # monotonic clock when the optimizer step was sent / started
    # Measured pool evaluation (``run.pool_eval_every``; orchestrator/_pool_eval.py). A line
    # carries the sampled success of every pool task, retired ones included, under *its own*
    # update's weights once that evaluation finished (the line is amended in place); -1 on
    # lines that were not evaluated and in logs written before these fields existed.
    replay_adjusted: float = -1.0  # adjusted reward, probed retired tasks at their replay rate
    pool_success: float = -1.0  # solved / rollouts of the whole pool, fixed seeds
    pool_success_low: float = -1.0  # Wilson 95 % interval of pool_success
    pool_success_high: float = -1.0
    pool_eval_version: int = -1  # the policy version evaluated
    pool_eval_step: int = -1  # the update that published it
    pool_eval_solved: int = 0
    pool_eval_rollouts: int = 0
    pool_eval_seconds: float = 0.0  # wall time of the evaluation (in the background)
    # Numerics: ω quantiles and mismatch by layer type. -1 = not measured (logs written before
    # these fields, a remote trainer, no trainable token, an update without an audit).
    omega_p1: float = -1.0  # ω = π_train/π_rollout over every trainable token of the step
    omega_p5: float = -1.0
    omega_p50: float = -1.0
    omega_p95: float = -1.0
    omega_p99: float = -1.0
    omega_min: float = -1.0
    omega_max: float = -1.0
    kl_audit_overall: float = -1.0  # mismatch_audit on one rollout window: engine vs trainer path
    kl_linear_attention: float = -1.0  # only the Gated DeltaNet layers on their decode path
    kl_full_attention: float = -1.0  # only softmax attention on its decode path
    kl_audit_tokens: int = 0  # tokens the audit scored
    kl_audit_seconds: float = 0.0  # its wall time (worker thread, generation goes on)
    # Replay feedback (deck.reactivate_below); 0 in logs written before these fields.
    replay_probes: int = 0  # replay probes of retired tasks recorded during this update
    reactivated: int = 0  # of those, probes that found the task forgotten: back in the pool

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise MetricsError(f"{item.name} is not finite: {value}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> UpdateMetrics:
        names = {f.name for f in fields(cls)}
        required = {
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        }
        missing = sorted(required - set(data))
        if missing:
            raise MetricsError(f"metrics line lacks {missing}")
        return cls(**{k: data[k] for k in names if k in data})


def append_json_line(path: Path, text: str) -> None:
    """Append one line to a JSON-lines log, flushed and fsynced (a crash loses no line)."""
    with path.open("a") as handle:
        handle.write(text + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSON-lines log (none when it does not exist; blank lines skipped).
    Raises :class:`MetricsError` naming the line that is not JSON."""
    if not path.exists():
        return
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise MetricsError(f"{path}:{number}: {exc}") from exc


class MetricsLog:
    """Append-only ``metrics.jsonl`` (each line flushed and fsynced)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: UpdateMetrics) -> int:
        """Write one line; return the number of lines now in the log (the cursor)."""
        append_json_line(self.path, record.to_json())
        return self.count()

    def count(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open() as handle:
            return sum(1 for line in handle if line.strip())

    def truncate(self, lines: int) -> None:
        """Keep the first ``lines`` records (what the resumed checkpoint has seen)."""
        kept = list(self.read_raw())[:lines]
        atomic_write_text(self.path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))

    def amend(self, step: int, changes: Mapping[str, Any]) -> None:
        """Set ``changes`` on the line of update ``step`` (atomic rewrite, same line count, so
        a checkpoint's cursor stays valid). Raises :class:`MetricsError` for an unknown field
        or a step the log does not hold."""
        names = {f.name for f in fields(UpdateMetrics)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise MetricsError(f"unknown metrics fields {unknown}")
        rows = list(self.read_raw())
        matches = [row for row in rows if row.get("step") == step]
        if not matches:
            raise MetricsError(f"{self.path} has no line for update {step}")
        matches[-1].update(changes)
        UpdateMetrics.from_mapping(matches[-1])  # still a valid record (finite figures)
        atomic_write_text(self.path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))

    def read_raw(self) -> Iterator[dict[str, Any]]:
        return read_json_lines(self.path)

    def read(self) -> list[UpdateMetrics]:
        return [UpdateMetrics.from_mapping(row) for row in self.read_raw()]
