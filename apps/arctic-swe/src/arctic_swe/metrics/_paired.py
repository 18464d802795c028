"""Each variant against the full recipe, paired seed by seed (``arctic-swe ablate --seeds``).

The stress test's diagnostic (Arctic-SWE §3.1) says each broken variant does worse than the full
recipe. Seed ``s`` of a variant and seed ``s`` of ``full`` share the deck, the warm start and the
evaluation streams (every in-run evaluation derives its task x sample streams from
``run.seed``), so they differ by the variant's change and by the training trajectory alone. The
comparison is therefore the per-seed difference of final-window measured success (variant -
full), and its interval is a t interval over seeds (:func:`arctic_swe._student.mean_interval`):
it grows with the seed-to-seed spread, which a Wilson interval over pooled rollouts ignores
(that one counts sampling noise only). A variant is "separated" from ``full`` only when that
interval excludes 0; one seed gives a difference and no interval.

The final window is the one the run's declared verdict reads (its ``[verdict]`` section over
its length, near-identical weights thinned out: :meth:`VerdictRule.window_records`), for the
pool and the held-out split alike; the warm-start evaluation (update 0) of both runs is
compared as a check that a pair really shares its start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rich.table import Table

from arctic_swe._student import MeanInterval, mean_interval
from arctic_swe.metrics._comparison import (
    NOT_MEASURED,
    Columns,
    ComparisonRow,
    columns_markdown,
    columns_table,
)
from arctic_swe.metrics._evaluations import HELDOUT_SPLIT, POOL_SPLIT, EvalRecord, of_split
from arctic_swe.metrics._seeds import by_variant
from arctic_swe.metrics._verdict import VerdictRule

#: The variant every other one is compared to.
REFERENCE = "full"
#: A difference this close to 0 is a tie (rates are ratios of counts: equal counts subtract to
#: exactly 0, so this only absorbs float rounding between unequal rollout counts).
_TIE = 1e-12

Seed = int | None  # None: a run without ``--seeds`` (the base config's seed)


@dataclass(frozen=True)
class WindowRate:
    """The evaluations of one split in a run's final window, their rollouts pooled."""

    steps: tuple[int, ...]
    solved: int
    rollouts: int

    @property
    def rate(self) -> float:
        return self.solved / self.rollouts if self.rollouts else 0.0


def final_window(
    evaluations: Sequence[EvalRecord], split: str, rule: VerdictRule
) -> WindowRate | None:
    """The ``split`` evaluations in ``rule``'s final window (``None``: none)."""
    window = rule.window_records(evaluations, split, rule.final)
    rollouts = sum(e.rollouts for e in window)
    if not rollouts:
        return None
    return WindowRate(tuple(e.step for e in window), sum(e.solved for e in window), rollouts)


def _seed_order(seed: Seed) -> tuple[bool, int]:
    return (seed is not None, -1 if seed is None else seed)


@dataclass(frozen=True)
class PairedDifference:
    """Variant - reference, one difference per seed both measured (``seeds`` ascending)."""

    seeds: tuple[Seed, ...]
    differences: tuple[float, ...]
    reference: str = REFERENCE

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def interval(self) -> MeanInterval | None:
        """Mean and 95 % t interval over seeds (``None``: no seed measured both)."""
        return mean_interval(self.differences) if self.differences else None

    @property
    def below(self) -> int:
        return sum(1 for d in self.differences if d < -_TIE)

    @property
    def above(self) -> int:
        return sum(1 for d in self.differences if d > _TIE)

    @property
    def ties(self) -> int:
        return self.n - self.below - self.above

    @property
    def separated(self) -> bool:
        """Whether the t interval over seeds excludes 0 (never with fewer than two seeds)."""
        interval = self.interval
        return interval is not None and interval.excludes_zero()

    def signs(self) -> str:
        """E.g. ``"3 of 4 below full, 1 tie"``."""
        if not self.n:
            return NOT_MEASURED
        parts = [f"{self.below} of {self.n} below {self.reference}"]
        if self.above:
            parts.append(f"{self.above} above")
        if self.ties:
            parts.append(f"{self.ties} tie" + ("s" if self.ties > 1 else ""))
        return ", ".join(parts)

    def verdict(self) -> str:
        interval = self.interval
        if interval is None:
            return NOT_MEASURED
        if not interval.defined:
            return "one seed: no interval"
        if not self.separated:
            return "not separated"
        return f"separated ({'below' if interval.high < 0 else 'above'} {self.reference})"


def paired_difference(
    variant: Mapping[Seed, float | None],
    reference: Mapping[Seed, float | None],
    reference_name: str = REFERENCE,
) -> PairedDifference:
    """Seed -> rate of a variant and of the reference, paired on the seeds both measured
    (a seed only one of them ran, or measured, is left out)."""
    pairs = sorted(
        (
            (seed, mine - theirs)
            for seed, mine in variant.items()
            if mine is not None and (theirs := reference.get(seed)) is not None
        ),
        key=lambda pair: _seed_order(pair[0]),
    )
    seeds = [seed for seed, _ in pairs]
    differences = [difference for _, difference in pairs]
    return PairedDifference(tuple(seeds), tuple(differences), reference_name)


@dataclass(frozen=True)
class StartCheck:
    """The warm-start (update 0) pool evaluations of each pair: ``pairs`` seeds where both runs
    have one, and for each whose rollouts differ, (seed, variant rate, reference rate). Shared
    deck, warm start and streams make them identical unless the variant changes how the
    evaluation samples or grades (the engines' numerics, the format check)."""

    pairs: int
    differing: tuple[tuple[Seed, float, float], ...]

    def describe(self) -> str:
        if not self.pairs:
            return NOT_MEASURED
        if not self.differing:
            return f"same on {self.pairs} of {self.pairs}"
        where = ", ".join(f"{_seed(s)}: {a:.3f} vs {b:.3f}" for s, a, b in self.differing)
        return f"DIFFERS on {len(self.differing)} of {self.pairs} ({where})"


def _start(evaluations: Sequence[EvalRecord]) -> EvalRecord | None:
    return next((e for e in of_split(evaluations, POOL_SPLIT) if e.step == 0), None)


def start_check(
    variant: Mapping[Seed, EvalRecord | None], reference: Mapping[Seed, EvalRecord | None]
) -> StartCheck:
    """Compare each pair's update-0 pool evaluations rollout by rollout."""
    pairs = 0
    differing = []
    for seed in sorted(variant, key=_seed_order):
        mine, theirs = variant[seed], reference.get(seed)
        if mine is None or theirs is None:
            continue
        pairs += 1
        if dict(mine.outcomes) != dict(theirs.outcomes):
            differing.append((seed, mine.rate, theirs.rate))
    return StartCheck(pairs, tuple(differing))


@dataclass(frozen=True)
class PairedRow:
    """One variant across its seeds (``seeds`` ascending): each seed's final-window pool and
    held-out success (``None``: not measured), and — except for the reference itself — the
    paired differences to the reference and the warm-start check."""

    variant: str
    seeds: tuple[Seed, ...]
    pool_rates: tuple[float | None, ...]
    heldout_rates: tuple[float | None, ...]
    pool: PairedDifference | None = None
    heldout: PairedDifference | None = None
    start: StartCheck | None = None

    @property
    def spread(self) -> float | None:
        """Largest minus smallest measured seed's pool rate (``None`` with fewer than two)."""
        rates = [r for r in self.pool_rates if r is not None]
        return max(rates) - min(rates) if len(rates) >= 2 else None


@dataclass(frozen=True)
class _RunFigures:
    pool: float | None
    heldout: float | None
    start: EvalRecord | None


def _figures(row: ComparisonRow) -> _RunFigures:
    rule = row.summary.verdict.rule  # the run's declared windows (default ones without a config)
    pool = final_window(row.evaluations, POOL_SPLIT, rule)
    heldout = final_window(row.evaluations, HELDOUT_SPLIT, rule)
    return _RunFigures(
        None if pool is None else pool.rate,
        None if heldout is None else heldout.rate,
        _start(row.evaluations),
    )


def paired_rows(rows: Sequence[ComparisonRow], reference: str = REFERENCE) -> list[PairedRow]:
    """The reference's row first, then one row per other variant in first-seen order.

    ``rows`` are labelled ``<variant>/seed-<n>`` (or ``<variant>`` for one run at the base
    seed), each with the verdict rule its config declared (``ComparisonRow.summary``). Empty
    when no row is the ``reference``: there is nothing to pair with.
    """
    grouped = by_variant((row.label, _figures(row)) for row in rows)
    if reference not in grouped:
        return []
    base = grouped[reference]
    found = [_row(reference, base)]
    for variant, runs in grouped.items():
        if variant != reference:
            found.append(_row(variant, runs, base, reference))
    return found


def _rates(runs: Mapping[Seed, _RunFigures], split: str) -> dict[Seed, float | None]:
    return {s: f.pool if split == POOL_SPLIT else f.heldout for s, f in runs.items()}


def _row(
    variant: str,
    runs: Mapping[Seed, _RunFigures],
    base: Mapping[Seed, _RunFigures] | None = None,
    reference: str = REFERENCE,
) -> PairedRow:
    """The row of one variant; paired with ``base`` (the reference's runs) when given."""
    seeds = tuple(sorted(runs, key=_seed_order))
    row = PairedRow(
        variant,
        seeds,
        tuple(runs[s].pool for s in seeds),
        tuple(runs[s].heldout for s in seeds),
    )
    if base is None:
        return row
    pool, heldout = (
        paired_difference(_rates(runs, split), _rates(base, split), reference)
        for split in (POOL_SPLIT, HELDOUT_SPLIT)
    )
    starts = start_check(
        {s: f.start for s, f in runs.items()}, {s: f.start for s, f in base.items()}
    )
    return replace(row, pool=pool, heldout=heldout, start=starts)


def _seed(seed: Seed) -> str:
    return "base" if seed is None else str(seed)


def _per_seed(seeds: Sequence[Seed], values: Sequence[float | None], signed: bool = False) -> str:
    form = "+.3f" if signed else ".3f"
    return ", ".join(
        f"{_seed(seed)}: {NOT_MEASURED if value is None else format(value, form)}"
        for seed, value in zip(seeds, values, strict=True)
    )


def _mean(difference: PairedDifference | None) -> str:
    if difference is None:
        return "reference"
    interval = difference.interval
    if interval is None:
        return NOT_MEASURED
    if not interval.defined:
        return f"{interval.mean:+.3f} (one seed)"
    return f"{interval.mean:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"


def _differences(difference: PairedDifference | None) -> str:
    if difference is None:
        return "reference"
    return _per_seed(difference.seeds, difference.differences, signed=True) or NOT_MEASURED


def _signs(difference: PairedDifference | None) -> str:
    return "reference" if difference is None else difference.signs()


def _verdict(difference: PairedDifference | None) -> str:
    return "reference" if difference is None else difference.verdict()


def _paired_columns(rows: Sequence[PairedRow]) -> Columns:
    ref = rows[0].variant if rows else REFERENCE  # paired_rows puts the reference first
    return [
        ("variant", [r.variant for r in rows]),
        ("seeds", [str(len(r.seeds)) for r in rows]),
        ("pool, final window per seed", [_per_seed(r.seeds, r.pool_rates) for r in rows]),
        ("spread", ["-" if r.spread is None else f"{r.spread:.3f}" for r in rows]),
        (f"Δ pool per seed (variant - {ref})", [_differences(r.pool) for r in rows]),
        ("Δ pool mean, 95 % t CI over seeds", [_mean(r.pool) for r in rows]),
        ("pool signs", [_signs(r.pool) for r in rows]),
        (f"pool vs {ref}", [_verdict(r.pool) for r in rows]),
        ("held-out, final window per seed", [_per_seed(r.seeds, r.heldout_rates) for r in rows]),
        ("Δ held-out mean, 95 % t CI", [_mean(r.heldout) for r in rows]),
        ("held-out signs", [_signs(r.heldout) for r in rows]),
        (f"held-out vs {ref}", [_verdict(r.heldout) for r in rows]),
        (
            f"warm start (update 0) vs {ref}",
            ["reference" if r.start is None else r.start.describe() for r in rows],
        ),
    ]


def paired_table(rows: Sequence[PairedRow], title: str = "paired with full, seed by seed") -> Table:
    """One rich row per variant (the reference first)."""
    return columns_table(_paired_columns(rows), title)


def paired_markdown(rows: Sequence[PairedRow]) -> str:
    """One markdown row per variant (the reference first)."""
    return columns_markdown(_paired_columns(rows))
