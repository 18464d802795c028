"""Training-health figures of a run, read back from ``metrics.jsonl``: how a stress-test run
collapses, not only that it did (Arctic-SWE §3.1).

The two collapses the long runs show both go through the same states, and each has a figure
here: the format drifts (``invalid_endings``: episodes the gate ended for an invalid or a
duplicate call; ``budget_endings``: episodes that ran out of turns or tokens without a
submit), the groups left to train on all score the same, and the step has no gradient
(``zero_grad_updates`` and the longest streak of them: ``grad_norm == 0`` exactly, which is what
a batch whose every advantage is zero gives). The defenses' activity sits beside them (IcePop
masked updates, the largest masked share, the largest lag) and the layer-type mismatch audit's
range per layer type. :func:`ending_windows` gives the same figures per block of updates, for
the "invalid endings per 9 updates" kind of reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arctic_swe.metrics._record import UpdateMetrics
from swe_formatcheck import GateReason

#: Gate endings of a malformed episode (the trainer's invalid trajectories).
INVALID_ENDINGS = (GateReason.INVALID_FORMAT.value, GateReason.DUPLICATE_CALL.value)
#: Endings of an episode that used its whole budget without a submit.
BUDGET_ENDINGS = (GateReason.TURN_BUDGET.value, GateReason.TOKEN_BUDGET.value)


@dataclass(frozen=True)
class Streak:
    """``length`` consecutive zero-gradient updates starting at update ``start``."""

    start: int
    length: int


@dataclass(frozen=True)
class RunHealth:
    """How a run trained, over all its updates (each figure from ``metrics.jsonl``).

    ``kl_linear_range`` / ``kl_full_range``: smallest and largest audited mismatch KL of the
    Gated DeltaNet and the softmax-attention layers (``None``: no update was audited).
    """

    label: str
    updates: int
    rollouts: int
    invalid_endings: int
    budget_endings: int
    zero_grad_updates: int
    longest_zero_grad: Streak | None
    masked_updates: int
    max_masked_frac: float
    max_lag: int
    kl_linear_range: tuple[float, float] | None
    kl_full_range: tuple[float, float] | None


@dataclass(frozen=True)
class EndingWindow:
    """The figures of updates ``first``..``last`` (a block of :func:`ending_windows`)."""

    first: int
    last: int
    rollouts: int
    invalid_endings: int
    budget_endings: int
    zero_grad_updates: int
    reward: float  # mean trained-batch reward over the block's updates


def _count(record: UpdateMetrics, endings: Sequence[str]) -> int:
    return sum(record.terminations.get(name, 0) for name in endings)


def zero_gradient(record: UpdateMetrics) -> bool:
    """Whether the update had no gradient at all (every trained advantage was zero)."""
    return record.grad_norm == 0.0


def longest_streak(records: Sequence[UpdateMetrics]) -> Streak | None:
    """The longest run of consecutive zero-gradient updates (the earliest of equal ones), or
    ``None`` when every update had a gradient."""
    best: Streak | None = None
    start, length = 0, 0
    for record in sorted(records, key=lambda r: r.step):
        if zero_gradient(record):
            start, length = (start, length + 1) if length else (record.step, 1)
            if best is None or length > best.length:
                best = Streak(start, length)
        else:
            length = 0
    return best


def trailing_zero_gradient(records: Sequence[UpdateMetrics]) -> int:
    """How many of the last updates, in a row, had no gradient (what a resumed run's stall
    count starts from)."""
    count = 0
    for record in sorted(records, key=lambda r: r.step, reverse=True):
        if not zero_gradient(record):
            break
        count += 1
    return count


def _range(values: Sequence[float]) -> tuple[float, float] | None:
    measured = [v for v in values if v >= 0]  # -1: not audited on that update
    return (min(measured), max(measured)) if measured else None


def run_health(label: str, records: Sequence[UpdateMetrics]) -> RunHealth:
    """The health figures of one run (any number of updates, zero included)."""
    return RunHealth(
        label=label,
        updates=len(records),
        rollouts=sum(r.rollouts for r in records),
        invalid_endings=sum(_count(r, INVALID_ENDINGS) for r in records),
        budget_endings=sum(_count(r, BUDGET_ENDINGS) for r in records),
        zero_grad_updates=sum(1 for r in records if zero_gradient(r)),
        longest_zero_grad=longest_streak(records),
        masked_updates=sum(1 for r in records if r.masked_frac > 0),
        max_masked_frac=max((r.masked_frac for r in records), default=0.0),
        max_lag=max((r.lag_max for r in records), default=0),
        kl_linear_range=_range([r.kl_linear_attention for r in records]),
        kl_full_range=_range([r.kl_full_attention for r in records]),
    )


def ending_windows(records: Sequence[UpdateMetrics], size: int) -> list[EndingWindow]:
    """The run cut into blocks of ``size`` consecutive updates (the last one may be shorter).

    Raises :class:`ValueError` for ``size < 1``.
    """
    if size < 1:
        raise ValueError(f"a window holds at least one update, not {size}")
    ordered = sorted(records, key=lambda r: r.step)
    blocks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    return [
        EndingWindow(
            first=block[0].step,
            last=block[-1].step,
            rollouts=sum(r.rollouts for r in block),
            invalid_endings=sum(_count(r, INVALID_ENDINGS) for r in block),
            budget_endings=sum(_count(r, BUDGET_ENDINGS) for r in block),
            zero_grad_updates=sum(1 for r in block if zero_gradient(r)),
            reward=sum(r.reward for r in block) / len(block),
        )
        for block in blocks
    ]
