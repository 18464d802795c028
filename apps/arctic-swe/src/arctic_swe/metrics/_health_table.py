"""The training-health figures (:mod:`arctic_swe.metrics._health`) as tables: one row per run
(``arctic-swe compare``, ``arctic-swe ablate``'s ``comparison.md``) and one row per block of
updates (``arctic-swe compare --windows N``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from arctic_swe.metrics._comparison import Columns, columns_markdown, columns_table
from arctic_swe.metrics._health import EndingWindow, RunHealth

NOT_AUDITED = "not audited"


def _share(count: int, total: int) -> str:
    return f"{count} / {total} ({100 * count / total:.0f} %)" if total else "0 / 0"


def _kl_range(bounds: tuple[float, float] | None) -> str:
    return NOT_AUDITED if bounds is None else f"{bounds[0]:.1e} - {bounds[1]:.1e}"


def _streak(health: RunHealth) -> str:
    streak = health.longest_zero_grad
    if streak is None:
        return "0"
    return f"{streak.length} (from update {streak.start})"


def _health_columns(rows: Sequence[RunHealth]) -> Columns:
    return [
        ("run", [h.label for h in rows]),
        ("ended invalid or duplicate", [_share(h.invalid_endings, h.rollouts) for h in rows]),
        ("ran out of budget", [_share(h.budget_endings, h.rollouts) for h in rows]),
        ("zero-gradient updates", [f"{h.zero_grad_updates} / {h.updates}" for h in rows]),
        ("longest zero-gradient streak", [_streak(h) for h in rows]),
        (
            "masked updates (largest share)",
            [f"{h.masked_updates} ({100 * h.max_masked_frac:.2f} %)" for h in rows],
        ),
        ("max lag", [str(h.max_lag) for h in rows]),
        ("audit KL, Gated DeltaNet", [_kl_range(h.kl_linear_range) for h in rows]),
        ("audit KL, softmax attention", [_kl_range(h.kl_full_range) for h in rows]),
    ]


def health_table(rows: Sequence[RunHealth], title: str = "training health") -> Table:
    """One rich row per run."""
    return columns_table(_health_columns(rows), title)


def health_markdown(rows: Sequence[RunHealth]) -> str:
    """One markdown row per run."""
    return columns_markdown(_health_columns(rows))


def _window_columns(windows: Sequence[EndingWindow]) -> Columns:
    return [
        ("updates", [f"{w.first}-{w.last}" for w in windows]),
        ("rollouts", [str(w.rollouts) for w in windows]),
        ("ended invalid or duplicate", [str(w.invalid_endings) for w in windows]),
        ("ran out of budget", [str(w.budget_endings) for w in windows]),
        ("zero-gradient updates", [str(w.zero_grad_updates) for w in windows]),
        ("trained reward", [f"{w.reward:.3f}" for w in windows]),
    ]


def windows_table(windows: Sequence[EndingWindow], title: str) -> Table:
    """One rich row per block of updates."""
    return columns_table(_window_columns(windows), title)
