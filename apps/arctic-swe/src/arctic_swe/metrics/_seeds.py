"""Several seeds of one variant, side by side (``arctic-swe ablate --seeds``).

One seed per variant orders nothing its intervals do not: two runs of one recipe on one warm
start can end further apart than two variants (Arctic-SWE §3.1's diagnostic is read on curves
that hold or collapse, and a single curve can do either by luck). Rows labelled
``<variant>/seed-<n>`` are grouped by variant; each group gives how many of its seeds climbed
and held (their declared verdicts), each seed's final-window pool success, their spread, and
the rollouts of all seeds' final windows pooled with a Wilson 95 % interval. That interval counts sampling noise only — it
treats every rollout as independent, which the seeds are not (each seed is one training
trajectory) — so the spread between seeds is printed beside it, and a variant is only
separated from another when the per-seed values separate too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe._wilson import wilson_interval
from arctic_swe.metrics._comparison import (
    NOT_MEASURED,
    Columns,
    ComparisonRow,
    columns_markdown,
    columns_table,
)

_SEEDED = re.compile(r"^(?P<variant>.+)/seed-(?P<seed>\d+)$")


def seed_label(variant: str, seed: int) -> str:
    """``("full", 3)`` -> ``"full/seed-3"``: the label (and ``ablate``'s run directory under
    ``OUT``) of one seed of a variant; :func:`split_seed_label` reads it back."""
    return f"{variant}/seed-{seed}"


def split_seed_label(label: str) -> tuple[str, int] | None:
    """``"full/seed-3"`` -> ``("full", 3)``; ``None`` for a label without a seed."""
    match = _SEEDED.match(label)
    return None if match is None else (match["variant"], int(match["seed"]))


@dataclass(frozen=True)
class SeedGroup:
    """The seeds of one variant (``seeds`` in row order).

    ``final_rates``: each seed's final-window pool success (``None`` where a seed has no
    evaluation there); ``held``: seeds whose verdict says they climbed and held (or are still
    climbing), of ``measured`` seeds with a verdict; ``solved`` / ``rollouts``: their final windows pooled, ``low`` / ``high`` its Wilson 95 %
    interval (sampling noise only), ``rate`` = solved / rollouts (NaN-free: 0 when nothing was
    measured).
    """

    variant: str
    seeds: tuple[int, ...]
    final_rates: tuple[float | None, ...]
    held: int
    measured: int
    solved: int
    rollouts: int
    rate: float
    low: float
    high: float

    @property
    def spread(self) -> float | None:
        """Largest minus smallest measured seed (``None`` with fewer than two)."""
        rates = [r for r in self.final_rates if r is not None]
        return max(rates) - min(rates) if len(rates) >= 2 else None


def seed_groups(rows: Sequence[ComparisonRow]) -> list[SeedGroup]:
    """The rows labelled ``<variant>/seed-<n>``, one group per variant in first-seen order;
    rows without a seed in their label are left out (an ablation without ``--seeds``)."""
    grouped: dict[str, list[tuple[int, ComparisonRow]]] = {}
    for row in rows:
        parsed = split_seed_label(row.label)
        if parsed is not None:
            grouped.setdefault(parsed[0], []).append((parsed[1], row))
    return [_group(variant, members) for variant, members in grouped.items()]


def _group(variant: str, members: Sequence[tuple[int, ComparisonRow]]) -> SeedGroup:
    verdicts = [row.summary.verdict for _, row in members]
    finals = [verdict.final for verdict in verdicts if verdict.final is not None]
    solved = sum(final.solved for final in finals)
    rollouts = sum(final.rollouts for final in finals)
    low, high = wilson_interval(solved, rollouts) if rollouts else (0.0, 0.0)
    return SeedGroup(
        variant=variant,
        seeds=tuple(seed for seed, _ in members),
        final_rates=tuple(verdict.final_rate for verdict in verdicts),
        held=sum(1 for verdict in verdicts if verdict.climbed_and_held),
        measured=sum(1 for verdict in verdicts if verdict.measured),
        solved=solved,
        rollouts=rollouts,
        rate=solved / rollouts if rollouts else 0.0,
        low=low,
        high=high,
    )


def _per_seed(group: SeedGroup) -> str:
    return ", ".join(
        f"{seed}: {NOT_MEASURED if rate is None else f'{rate:.3f}'}"
        for seed, rate in zip(group.seeds, group.final_rates, strict=True)
    )


def _pooled(group: SeedGroup) -> str:
    if not group.rollouts:
        return NOT_MEASURED
    return (
        f"{group.rate:.3f} [{group.low:.2f}-{group.high:.2f}] ({group.solved} / {group.rollouts})"
    )


def _seed_columns(groups: Sequence[SeedGroup]) -> Columns:
    return [
        ("variant", [g.variant for g in groups]),
        ("seeds", [str(len(g.seeds)) for g in groups]),
        ("climbed and held", [f"{g.held} of {g.measured}" for g in groups]),
        ("last third per seed", [_per_seed(g) for g in groups]),
        ("spread", ["-" if g.spread is None else f"{g.spread:.3f}" for g in groups]),
        ("seeds pooled, 95 % CI (sampling only)", [_pooled(g) for g in groups]),
    ]


def seeds_table(groups: Sequence[SeedGroup], title: str = "seeds per variant") -> Table:
    """One rich row per variant."""
    return columns_table(_seed_columns(groups), title)


def seeds_markdown(groups: Sequence[SeedGroup]) -> str:
    """One markdown row per variant."""
    return columns_markdown(_seed_columns(groups))
