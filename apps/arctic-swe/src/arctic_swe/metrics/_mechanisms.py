"""What each ablation can act through, measured in its run and in the full recipe's.

An ablation that changes nothing measurable at this scale cannot make a run worse, so "no
difference to full" means one of two things: the mechanism works and the recipe does not need
it here, or the mechanism has no channel (the IcePop mask almost never fires, no rollout spans a
weight refresh, the caps never drop a group). Arctic-SWE §3.1 reads the stress test as evidence
for each fix only in the first case. Each variant gets the quantity its change acts through,
computed from the runs' :class:`UpdateMetrics` (averaged over seeds), in the variant and in
``full``, and a channel decided against a declared floor (the constants below, each with why).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics._comparison import (
    NOT_MEASURED,
    Columns,
    ComparisonRow,
    columns_markdown,
    columns_table,
)
from arctic_swe.metrics._mechanism_figures import (
    Figures,
    endings,
    eviction,
    format_figure,
    lag,
    mask,
    numerics,
    placement,
    reduce_figures,
    stale,
)
from arctic_swe.metrics._record import UpdateMetrics
from arctic_swe.metrics._seeds import by_variant

REFERENCE = "full"
ACTS = "acts"
NO_CHANNEL = "no channel at this scale"

# Floors: below them a mechanism touches too little of the run to change its outcome.
#: IcePop masks (PPO clips) under half a percent of trained tokens: the gradient of the other
#: 99.5 % is the same under either rule, so clip-vs-mask cannot move the curve.
MASKED_FLOOR = 0.005
#: Trained tokens sampled on average under 0.01 versions behind the trained one: a stale cache
#: can only feed a token of a rollout that spanned a weight refresh, and such a token is sampled
#: behind the version it is trained at, so fewer than 1 token in 100 one version behind leaves
#: keeping caches across refreshes almost nothing to change.
LAG_FLOOR = 0.01
#: Mismatch KL between the engine and the trainer on lag-0 updates under 1e-9 nats per token:
#: KL ~ E[δ²] / 2 for a log-ratio δ, so the bf16 rounding of the recurrent state then moves a
#: token's log-probability by ~4.5e-5 in root mean square, orders of magnitude below the
#: sampling noise of one group's advantage.
KL_FLOOR = 1e-9
#: Groups the max_off_policy cap drops, under 1 % of the groups trained: the cap then removes
#: almost nothing from a batch (the cap is the full recipe's, no variant turns it off).
STALE_FLOOR = 0.01
#: Session-hash places groups unevenly by more than least-loaded does by under a tenth of an
#: update's groups: least-loaded keeps engines within a group of each other, and a difference
#: below that places almost every group on the same engine either way.
PLACEMENT_FLOOR = 0.1
#: The full recipe retires no task: then no-eviction trains on the very same deck.
RETIRED_FLOOR = 1.0
#: Episodes ended for an invalid format or a duplicate call under half a percent of rollouts:
#: the gate (and the strict format check) then zeroes almost no reward.
INVALID_FLOOR = 0.005

#: How the floor is compared: the larger of the variant's and full's figure, the variant's minus
#: full's, or full's alone.
LARGER, DIFFERENCE, IN_REFERENCE = "larger of the two", "variant - full", "in full"


@dataclass(frozen=True)
class Mechanism:
    """What one variant changes: ``measure`` gives a run's figures (``FIGURES`` names), the
    first named in ``figures`` is the channel, held against ``floor`` by ``rule``."""

    name: str
    figures: tuple[str, ...]
    measure: Callable[[Sequence[UpdateMetrics]], Figures] | None
    floor: float = 0.0
    rule: str = LARGER


#: Each variant's mechanism (the variants of ``arctic_swe.ablate.VARIANTS``).
MECHANISMS: dict[str, Mechanism] = {
    "full": Mechanism(
        "max_off_policy cap: stale groups dropped",
        ("stale share", "stale drops"), stale, STALE_FLOOR,
    ),
    "clip": Mechanism(
        "IcePop mask (full) vs PPO clip: tokens outside the band",
        ("masked", "masked updates", "omega min", "omega max"), mask, MASKED_FLOOR,
    ),
    "ungated": Mechanism(
        "gated reward: episodes the gate ends", ("invalid endings",), endings, INVALID_FLOOR,
    ),
    "no-eviction": Mechanism(
        "eviction: tasks retired",
        ("retired", "evictions", "zero-gradient updates"), eviction, RETIRED_FLOOR, IN_REFERENCE,
    ),
    "bf16-state": Mechanism(
        "fp32 numerics: engine-trainer mismatch",
        ("lag-0 KL", "audit KL", "DeltaNet KL", "attention KL"), numerics, KL_FLOOR,
    ),
    "session-hash": Mechanism(
        "routing: groups placed off the least-loaded engine",
        ("imbalance", "engines"), placement, PLACEMENT_FLOOR, DIFFERENCE,
    ),
    "no-invalidation": Mechanism(
        "cache invalidation: rollouts spanning a refresh",
        ("token lag", "lag mean", "lag max", "lagged updates"), lag, LAG_FLOOR,
    ),
    "lenient": Mechanism(
        "strict format check: invalid endings", ("invalid endings",), endings, INVALID_FLOOR,
    ),
    "rollout-mean": Mechanism("token-mean vs rollout-mean weighting", (), None),
}  # fmt: skip


@dataclass(frozen=True)
class MechanismRow:
    """One variant: its mechanism's figures in its own runs and in full's (seed averages),
    the channel figure held against the floor, and the decision."""

    variant: str
    mechanism: str
    seeds: int
    figures: tuple[str, ...]
    in_variant: Mapping[str, float | None]
    in_reference: Mapping[str, float | None]
    channel_value: float | None
    floor: float
    rule: str
    channel: str


def channel_value(
    mechanism: Mechanism, in_variant: Mapping[str, float | None],
    in_reference: Mapping[str, float | None],
) -> float | None:  # fmt: skip
    """The figure the floor is held against (``None``: not measured)."""
    if not mechanism.figures:
        return None
    key = mechanism.figures[0]
    mine, theirs = in_variant.get(key), in_reference.get(key)
    if mechanism.rule == IN_REFERENCE:
        return theirs
    if mechanism.rule == DIFFERENCE:
        return None if mine is None or theirs is None else mine - theirs
    measured = [v for v in (mine, theirs) if v is not None]
    return max(measured) if measured else None


def decide(value: float | None, floor: float) -> str:
    """:data:`ACTS` from the floor up, :data:`NO_CHANNEL` below it."""
    if value is None:
        return NOT_MEASURED
    return ACTS if value >= floor else NO_CHANNEL


def _figures(mechanism: Mechanism, runs: Sequence[Sequence[UpdateMetrics]]) -> Figures:
    if mechanism.measure is None or not runs:
        return {}
    measure = mechanism.measure
    return reduce_figures([measure(records) for records in runs])


def mechanism_rows(rows: Sequence[ComparisonRow], reference: str = REFERENCE) -> list[MechanismRow]:
    """One row per variant of ``rows`` (labels ``<variant>`` or ``<variant>/seed-<n>``), in
    first-seen order; a variant without an entry in :data:`MECHANISMS` is not measured."""
    grouped = by_variant((row.label, row.records) for row in rows)
    base = list(grouped.get(reference, {}).values())
    found = []
    for variant, runs in grouped.items():
        mechanism = MECHANISMS.get(variant, Mechanism("not named for this variant", (), None))
        mine = _figures(mechanism, list(runs.values()))
        theirs = _figures(mechanism, base)
        value = channel_value(mechanism, mine, theirs)
        found.append(
            MechanismRow(
                variant=variant, mechanism=mechanism.name, seeds=len(runs),
                figures=mechanism.figures, in_variant=mine, in_reference=theirs,
                channel_value=value, floor=mechanism.floor, rule=mechanism.rule,
                channel=decide(value, mechanism.floor),
            )
        )  # fmt: skip
    return found


def _activity(row: MechanismRow, figures: Mapping[str, float | None]) -> str:
    if not row.figures:
        return NOT_MEASURED
    return ", ".join(f"{name} {format_figure(name, figures.get(name))}" for name in row.figures)


def _floor(row: MechanismRow) -> str:
    if not row.figures:
        return "-"
    name = row.figures[0]
    return f"{name} >= {format_figure(name, row.floor)} ({row.rule})"


def _mechanism_columns(rows: Sequence[MechanismRow]) -> Columns:
    return [
        ("variant", [r.variant for r in rows]),
        ("seeds", [str(r.seeds) for r in rows]),
        ("mechanism", [r.mechanism for r in rows]),
        ("in the variant", [_activity(r, r.in_variant) for r in rows]),
        ("in full", [_activity(r, r.in_reference) for r in rows]),
        ("channel if", [_floor(r) for r in rows]),
        ("channel", [r.channel for r in rows]),
    ]


def mechanism_table(
    rows: Sequence[MechanismRow], title: str = "what each ablation can act through"
) -> Table:
    """One rich row per variant."""
    return columns_table(_mechanism_columns(rows), title)


def mechanism_markdown(rows: Sequence[MechanismRow]) -> str:
    """One markdown row per variant."""
    return columns_markdown(_mechanism_columns(rows))
