"""The stress test's verdict figures and the end-of-run summary table (rich).

The verdict (Arctic-SWE §3.1: the pool reward climbs *and holds*) reads the **measured** pool
success (``pool_success``: every pool task, retired ones included, sampled under one policy
version with fixed seeds; orchestrator/_pool_eval.py) — not the deck's eviction-adjusted
reward, which imputes 1.0 to a retired task forever and leaves out tasks never sampled, so it
cannot fall when retired tasks are forgotten. The imputed figure and ``replay_adjusted`` (the
same with probed retired tasks at their replay rate) are reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe._wilson import wilson_interval
from arctic_swe.metrics._record import UpdateMetrics

#: ``held`` means the final window keeps this share of the peak window.
HOLD_SHARE = 0.9


@dataclass(frozen=True)
class PoolFigure:
    """Measured pool success over consecutive evaluations (the updates in ``steps``):
    ``rate`` is the mean of their rates, ``low``/``high`` the Wilson 95 % interval of their
    pooled rollouts (``solved`` of ``rollouts``)."""

    steps: tuple[int, ...]
    solved: int
    rollouts: int
    rate: float
    low: float
    high: float

    def describe(self) -> str:
        return f"{self.rate:.3f} [{self.low:.2f}-{self.high:.2f}]"

    def where(self) -> str:
        first, last = self.steps[0], self.steps[-1]
        return f"update {first}" if first == last else f"updates {first}-{last}"


@dataclass(frozen=True)
class PoolVerdict:
    """First, peak and final measured pool success and the no-collapse verdict.

    ``window`` is the number of evaluations in the last third of the run (at least 1);
    ``final`` is those evaluations, ``peak`` the best ``window`` consecutive ones, ``first``
    the first evaluation alone. ``held``: ``final.rate >= 0.9 * peak.rate``.
    """

    evaluations: int
    window: int
    first: PoolFigure
    peak: PoolFigure
    final: PoolFigure
    held: bool


@dataclass(frozen=True)
class RunSummary:
    """Headline figures of a run.

    ``pool``: the measured verdict (:class:`PoolVerdict`), ``None`` when no update was
    evaluated (``run.pool_eval_every = 0`` or a log from before the measurement); ``held`` is
    its verdict (``None``: not measured). ``first_window``/``final_window``/``peak_window``:
    mean eviction-adjusted (imputed) reward over the first, last and best window of
    ``window`` consecutive updates (20 % of the run, at least 1), and ``adjusted_held`` that
    figure's old criterion — kept for comparison, never the verdict. ``replay_first_window`` /
    ``replay_final_window``: the same windows of ``replay_adjusted`` over the updates that
    logged it (``None`` if none). ``batch_first_window`` / ``batch_final_window``: the
    trained batches' reward (it drifts down as mastered tasks retire).
    """

    updates: int
    window: int
    first_window: float
    final_window: float
    peak_window: float
    held: bool | None
    mean_wait_fraction: float  # trainer time spent waiting / (waiting + compute)
    stale_dropped: int
    dropped_rollouts: int
    mean_mismatch_kl: float
    wall_seconds: float
    batch_first_window: float = 0.0
    batch_final_window: float = 0.0
    pool: PoolVerdict | None = None
    adjusted_held: bool = False
    replay_first_window: float | None = None
    replay_final_window: float | None = None


def _window_means(values: Sequence[float], window: int) -> list[float]:
    return [sum(values[i : i + window]) / window for i in range(len(values) - window + 1)]


def pool_points(records: Sequence[UpdateMetrics]) -> list[UpdateMetrics]:
    """The evaluated updates (``pool_eval_rollouts > 0``), in update order."""
    return sorted((r for r in records if r.pool_eval_rollouts > 0), key=lambda r: r.step)


def _figure(points: Sequence[UpdateMetrics]) -> PoolFigure:
    solved = sum(p.pool_eval_solved for p in points)
    rollouts = sum(p.pool_eval_rollouts for p in points)
    low, high = wilson_interval(solved, rollouts)
    rate = sum(p.pool_success for p in points) / len(points)
    return PoolFigure(tuple(p.step for p in points), solved, rollouts, rate, low, high)


def pool_verdict(records: Sequence[UpdateMetrics]) -> PoolVerdict | None:
    """The measured verdict of a run, or ``None`` when no update was evaluated."""
    points = pool_points(records)
    if not points:
        return None
    last_step = max(r.step for r in records)
    window = max(1, sum(1 for p in points if 3 * p.step > 2 * last_step))
    window = min(window, len(points))
    windows = [_figure(points[i : i + window]) for i in range(len(points) - window + 1)]
    peak = max(windows, key=lambda figure: figure.rate)  # the earliest of equal peaks
    final = windows[-1]
    return PoolVerdict(
        evaluations=len(points),
        window=window,
        first=_figure(points[:1]),
        peak=peak,
        final=final,
        held=final.rate >= HOLD_SHARE * peak.rate,
    )


def summarize(records: Sequence[UpdateMetrics]) -> RunSummary:
    """Summary of a non-empty run."""
    if not records:
        raise ValueError("no updates to summarize")
    window = max(1, round(0.2 * len(records)))
    means = _window_means([r.adjusted_reward for r in records], window)
    batch = _window_means([r.reward for r in records], window)
    replay = [r.replay_adjusted for r in records if r.replay_adjusted >= 0]
    replay_means = _window_means(replay, min(window, len(replay))) if replay else []
    wait = sum(r.wait_seconds for r in records)
    busy = wait + sum(r.train_seconds for r in records)
    pool = pool_verdict(records)
    return RunSummary(
        updates=len(records),
        window=window,
        first_window=means[0],
        final_window=means[-1],
        peak_window=max(means),
        held=None if pool is None else pool.held,
        mean_wait_fraction=wait / busy if busy > 0 else 0.0,
        stale_dropped=sum(r.stale_dropped for r in records),
        dropped_rollouts=sum(r.dropped_rollouts for r in records),
        mean_mismatch_kl=sum(r.mismatch_kl for r in records) / len(records),
        wall_seconds=sum(r.wall_seconds for r in records),
        batch_first_window=batch[0],
        batch_final_window=batch[-1],
        pool=pool,
        adjusted_held=means[-1] >= HOLD_SHARE * max(means),
        replay_first_window=replay_means[0] if replay_means else None,
        replay_final_window=replay_means[-1] if replay_means else None,
    )


def _held_text(held: bool | None) -> str:
    return "not measured" if held is None else ("yes" if held else "NO")


def _pool_rows(summary: RunSummary) -> list[tuple[str, str]]:
    pool = summary.pool
    if pool is None:
        return [
            ("pool success (measured)", "not measured (run.pool_eval_every = 0 or an old log)"),
            ("held", "not measured"),
        ]
    k = pool.window
    return [
        (f"pool success (measured), first ({pool.first.where()})", pool.first.describe()),
        (f"pool success, peak {k}-evaluation window ({pool.peak.where()})", pool.peak.describe()),
        (f"pool success, final {k} (last third: {pool.final.where()})", pool.final.describe()),
        ("held (final >= 0.9 x peak, last third)", _held_text(pool.held)),
    ]


def summary_table(summary: RunSummary, title: str = "arctic-swe overfit") -> Table:
    """A two-column rich table of :class:`RunSummary`: the measured verdict first, then the
    training-side figures (the imputed eviction-adjusted reward labelled as such)."""
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    w = summary.window

    def optional(value: float | None) -> str:
        return "not logged" if value is None else f"{value:.3f}"

    rows = [
        ("updates", f"{summary.updates}"),
        *_pool_rows(summary),
        (f"replay-adjusted reward, first {w}", optional(summary.replay_first_window)),
        (f"replay-adjusted reward, last {w}", optional(summary.replay_final_window)),
        (f"eviction-adjusted reward (imputed), first {w}", f"{summary.first_window:.3f}"),
        (f"eviction-adjusted reward (imputed), last {w}", f"{summary.final_window:.3f}"),
        (f"eviction-adjusted reward (imputed), peak {w}", f"{summary.peak_window:.3f}"),
        ("trainer time waiting", f"{100 * summary.mean_wait_fraction:.1f} %"),
        ("stale groups dropped", f"{summary.stale_dropped}"),
        ("rollouts lost to failures", f"{summary.dropped_rollouts}"),
        ("mean mismatch KL", f"{summary.mean_mismatch_kl:.2e}"),
        ("wall time", f"{summary.wall_seconds:.0f} s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table
