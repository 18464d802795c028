"""Paired per-task comparisons of evaluations of one run (the stress test's verdict,
Arctic-SWE §3.1): windows of evaluations pooled per task, the mean per-task difference with a
Student-t interval over tasks, and the thinning that keeps near-identical weights out of one
window.

Every evaluation of a run samples task ``k``'s sample ``s`` from the same stream
(``RUN/evaluations.jsonl``), so the same task of two evaluations differs by the policy and by
the luck the streams do not fix; the task is the unit, and the interval says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arctic_swe._student import MeanInterval, mean_interval
from arctic_swe.metrics._evaluations import EvalRecord


def thin(records: Sequence[EvalRecord], every: int) -> tuple[list[EvalRecord], tuple[int, ...]]:
    """``(kept, left-out steps)``: in step order, an evaluation less than ``every / 2`` updates
    after the last kept one is left out (its weights are nearly the kept one's: pooling both
    would count one policy twice). ``every = 0`` keeps everything. Update 0 (the warm start)
    is always kept and never an anchor: no window pools it with a trained policy, so a short
    run's final evaluation a few updates after it (4 updates at a cadence of 9) stays."""
    kept: list[EvalRecord] = []
    left: list[int] = []
    for record in sorted(records, key=lambda r: r.step):
        anchor = kept[-1].step if kept and kept[-1].step > 0 else None
        if anchor is not None and every > 0 and 2 * (record.step - anchor) < every:
            left.append(record.step)
        else:
            kept.append(record)
    return kept, tuple(left)


@dataclass(frozen=True)
class EvalWindow:
    """Evaluations of one split averaged together: their ``steps``, and ``solved`` of
    ``rollouts`` over the ``tasks`` they were restricted to."""

    steps: tuple[int, ...]
    tasks: int
    solved: int
    rollouts: int

    @property
    def rate(self) -> float:
        return self.solved / self.rollouts if self.rollouts else 0.0

    def where(self) -> str:
        first, last = self.steps[0], self.steps[-1]
        if first == last:
            return f"update {first}"
        return f"updates {first}-{last}, {len(self.steps)} evaluations"


def _task_cells(records: Sequence[EvalRecord], tasks: Sequence[str]) -> dict[str, tuple[int, int]]:
    """task -> (solved, samples) summed over ``records``."""
    return {
        task: (
            sum(r.outcomes[task].count("1") for r in records),
            sum(len(r.outcomes[task]) for r in records),
        )
        for task in tasks
    }


def window(records: Sequence[EvalRecord], tasks: Sequence[str] | None = None) -> EvalWindow:
    """``records`` (non-empty) pooled over ``tasks`` (default: the tasks all of them hold)."""
    chosen = sorted(common_tasks(records)) if tasks is None else list(tasks)
    cells = _task_cells(records, chosen)
    return EvalWindow(
        steps=tuple(r.step for r in records),
        tasks=len(chosen),
        solved=sum(s for s, _ in cells.values()),
        rollouts=sum(n for _, n in cells.values()),
    )


def common_tasks(records: Sequence[EvalRecord]) -> set[str]:
    """The tasks every record evaluated."""
    sets = [set(r.outcomes) for r in records]
    return set.intersection(*sets) if sets else set()


@dataclass(frozen=True)
class PairedChange:
    """``after`` minus ``before`` on the same tasks: ``difference`` is the mean over tasks of
    each task's rate difference, with its t interval over tasks. ``paired``: every evaluation
    on both sides used one stream, one seed and one number of samples per task, so each task's
    cells are the same streams before and after."""

    before: EvalWindow
    after: EvalWindow
    difference: MeanInterval
    paired: bool

    def above(self, margin: float) -> bool:
        return self.difference.defined and self.difference.low > margin

    def below(self, margin: float) -> bool:
        return self.difference.defined and self.difference.high < -margin

    def includes(self) -> str:
        """What the interval counts, e.g. ``"t over 16 tasks, paired, 95 %"``."""
        pairing = "paired" if self.paired else "unpaired streams"
        return (
            f"t over {self.difference.n} tasks, {pairing}, {self.difference.confidence * 100:g} %"
        )

    def describe(self) -> str:
        """``"0.312 → 0.688: +0.375 [+0.21, +0.54] (t over 16 tasks, paired, 95 %)"``."""
        d = self.difference
        bounds = f"[{d.low:+.2f}, {d.high:+.2f}]" if d.defined else "[no interval: one task]"
        return (
            f"{self.before.rate:.3f} → {self.after.rate:.3f}: {d.mean:+.3f} {bounds} "
            f"({self.includes()})"
        )


def paired_change(
    before: Sequence[EvalRecord], after: Sequence[EvalRecord], confidence: float
) -> PairedChange | None:
    """The paired change from ``before`` to ``after`` over the tasks all of them hold;
    ``None`` when either side is empty or they share no task."""
    tasks = sorted(common_tasks([*before, *after]))
    if not before or not after or not tasks:
        return None
    first, last = _task_cells(before, tasks), _task_cells(after, tasks)
    differences = [last[t][0] / last[t][1] - first[t][0] / first[t][1] for t in tasks]
    designs = {(r.stream, r.seed, r.samples) for r in [*before, *after]}
    return PairedChange(
        before=window(before, tasks),
        after=window(after, tasks),
        difference=mean_interval(differences, confidence),
        paired=len(designs) == 1,
    )
