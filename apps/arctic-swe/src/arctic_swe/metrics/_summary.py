"""The end-of-run summary of a run and its table (rich).

The verdict (Arctic-SWE §3.1: the pool success climbs *and holds*) is
:func:`~arctic_swe.metrics.run_verdict` over the run's evaluations (``RUN/evaluations.jsonl``):
paired per task, update 0 → final window and a reference window → final window, against a
rule declared before the run (the ``[verdict]`` section). It never reads the deck's
eviction-adjusted reward, which imputes 1.0 to a retired task forever and leaves out tasks
never sampled, so it cannot fall when retired tasks are forgotten; that figure and
``replay_adjusted`` (the same with probed retired tasks at their replay rate) are reported
beside it, labelled, never as the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics._evaluations import EvalRecord
from arctic_swe.metrics._record import UpdateMetrics
from arctic_swe.metrics._verdict import RunVerdict, VerdictRule, run_verdict


@dataclass(frozen=True)
class RunSummary:
    """Headline figures of a run.

    ``verdict``: the declared verdict over the run's evaluations (:class:`RunVerdict`; its
    label is "not measured" without them). ``first_window`` / ``final_window``: mean
    eviction-adjusted (imputed) reward over the first and last ``window`` updates (20 % of the
    run, at least 1) — a training-side figure, never the verdict. ``replay_first_window`` /
    ``replay_final_window``: the same windows of ``replay_adjusted`` over the updates that
    logged it (``None`` if none). ``batch_first_window`` / ``batch_final_window``: the trained
    batches' reward (it drifts down as mastered tasks retire).
    """

    updates: int
    window: int
    first_window: float
    final_window: float
    verdict: RunVerdict
    mean_wait_fraction: float  # trainer time spent waiting / (waiting + compute)
    stale_dropped: int
    dropped_rollouts: int
    mean_mismatch_kl: float
    wall_seconds: float
    batch_first_window: float = 0.0
    batch_final_window: float = 0.0
    replay_first_window: float | None = None
    replay_final_window: float | None = None


def _window_means(values: Sequence[float], window: int) -> list[float]:
    return [sum(values[i : i + window]) / window for i in range(len(values) - window + 1)]


def summarize(
    records: Sequence[UpdateMetrics],
    evaluations: Sequence[EvalRecord] = (),
    rule: VerdictRule | None = None,
) -> RunSummary:
    """Summary of a non-empty run: its metrics, and the verdict of ``evaluations`` (the run's
    ``RUN/evaluations.jsonl``) under ``rule`` (default: the default windows over the updates
    logged, nothing thinned)."""
    if not records:
        raise ValueError("no updates to summarize")
    window = max(1, round(0.2 * len(records)))
    means = _window_means([r.adjusted_reward for r in records], window)
    batch = _window_means([r.reward for r in records], window)
    replay = [r.replay_adjusted for r in records if r.replay_adjusted >= 0]
    replay_means = _window_means(replay, min(window, len(replay))) if replay else []
    wait = sum(r.wait_seconds for r in records)
    busy = wait + sum(r.train_seconds for r in records)
    rule = rule or VerdictRule(updates=max(1, max(r.step for r in records)))
    return RunSummary(
        updates=len(records),
        window=window,
        first_window=means[0],
        final_window=means[-1],
        verdict=run_verdict(evaluations, rule),
        mean_wait_fraction=wait / busy if busy > 0 else 0.0,
        stale_dropped=sum(r.stale_dropped for r in records),
        dropped_rollouts=sum(r.dropped_rollouts for r in records),
        mean_mismatch_kl=sum(r.mismatch_kl for r in records) / len(records),
        wall_seconds=sum(r.wall_seconds for r in records),
        batch_first_window=batch[0],
        batch_final_window=batch[-1],
        replay_first_window=replay_means[0] if replay_means else None,
        replay_final_window=replay_means[-1] if replay_means else None,
    )


def verdict_rows(verdict: RunVerdict) -> list[tuple[str, str]]:
    """(figure, value) rows of a verdict: the paired changes with what their intervals
    include, the label, the rule and what was left out."""
    rule = verdict.rule
    label = verdict.label + (f" ({verdict.reason})" if verdict.reason else "")
    return [
        (f"pool success, update 0 → final ({rule.steps(rule.final)})", verdict.climb_text()),
        (
            f"pool success, reference ({rule.steps(rule.reference)}) → final",
            verdict.hold_text(),
        ),
        ("verdict (declared before the run)", label),
        ("verdict rule", rule.describe()),
        ("held-out success, update 0 → final (beside the verdict)", verdict.heldout_text()),
        (
            "evaluations left out (< half the cadence after a kept one)",
            ", ".join(map(str, verdict.left_out)) or "none",
        ),
    ]


def summary_table(summary: RunSummary, title: str = "arctic-swe overfit") -> Table:
    """A two-column rich table of :class:`RunSummary`: the verdict first, then the
    training-side figures (the imputed eviction-adjusted reward labelled as such)."""
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    w = summary.window

    def optional(value: float | None) -> str:
        return "not logged" if value is None else f"{value:.3f}"

    rows = [
        ("updates", f"{summary.updates}"),
        *verdict_rows(summary.verdict),
        (f"replay-adjusted reward, first {w}", optional(summary.replay_first_window)),
        (f"replay-adjusted reward, last {w}", optional(summary.replay_final_window)),
        (f"eviction-adjusted reward (imputed), first {w}", f"{summary.first_window:.3f}"),
        (f"eviction-adjusted reward (imputed), last {w}", f"{summary.final_window:.3f}"),
        ("trainer time waiting", f"{100 * summary.mean_wait_fraction:.1f} %"),
        ("stale groups dropped", f"{summary.stale_dropped}"),
        ("rollouts lost to failures", f"{summary.dropped_rollouts}"),
        ("mean mismatch KL", f"{summary.mean_mismatch_kl:.2e}"),
        ("wall time", f"{summary.wall_seconds:.0f} s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table
