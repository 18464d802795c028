"""The summary table of ``arctic-swe evaluate``: one row per policy, the first as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from arctic_swe.evaluate._evaluate import PolicyEvaluation


def evaluation_table(results: Sequence[PolicyEvaluation], title: str = "evaluation") -> Table:
    """Solved / rollouts, rate with its Wilson 95 % interval, the change against the first row
    (``Δ first``), and how the rollouts ended: ``submit``, ``invalid`` format (the drift to
    watch in RL) and ``other`` (duplicate call, budgets, context limit)."""
    table = Table(title=title)
    for name, justify in (
        ("policy", "left"),
        ("solved", "right"),
        ("rate", "right"),
        ("95% CI", "right"),
        ("Δ first", "right"),
        ("submit", "right"),
        ("invalid", "right"),
        ("other", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    baseline = results[0].rate if results else 0.0
    for index, result in enumerate(results):
        low, high = result.interval
        submitted = result.terminations.get("submitted", 0)
        invalid = result.terminations.get("invalid_format", 0)
        table.add_row(
            result.label,
            f"{result.solved}/{result.rollouts}",
            f"{result.rate:.1%}",
            f"{low:.0%}-{high:.0%}",
            "—" if index == 0 else f"{result.rate - baseline:+.1%}",
            str(submitted),
            str(invalid),
            str(result.rollouts - submitted - invalid),
        )
    return table
