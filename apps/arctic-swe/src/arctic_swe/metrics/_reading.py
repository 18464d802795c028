"""Each variant against the full recipe in one sentence: separated or not, and why not.

The stress test (Arctic-SWE §3.1) reads each ablation as evidence for its fix only when the
variant does measurably worse. Where the paired interval over seeds (``_paired``) includes 0,
the reason is one of three, each measured: too few seeds for an interval; the mechanism has no
channel at this scale (``_mechanisms``: its activity below the declared floor); or it acts and
the difference is smaller than the seed-to-seed spread lets two runs per seed resolve — the
interval's half-width, from the standard deviation of the per-seed differences, says how small
a difference this design could have detected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from arctic_swe.metrics._comparison import (
    NOT_MEASURED,
    Columns,
    ComparisonRow,
    columns_markdown,
    columns_table,
)
from arctic_swe.metrics._mechanism_figures import format_figure
from arctic_swe.metrics._mechanisms import ACTS, NO_CHANNEL, MechanismRow, mechanism_rows
from arctic_swe.metrics._paired import REFERENCE, PairedDifference, PairedRow, paired_rows


@dataclass(frozen=True)
class Reading:
    """One variant (never the reference): its pool and held-out verdicts against the reference
    and the sentence that says why, from the paired differences and the mechanism's channel."""

    variant: str
    pool: str
    heldout: str
    channel: str
    reason: str


def reading_rows(rows: Sequence[ComparisonRow], reference: str = REFERENCE) -> list[Reading]:
    """One reading per variant other than ``reference``, in the paired table's order; empty
    when no row is the reference."""
    paired = paired_rows(rows, reference)
    mechanisms = {row.variant: row for row in mechanism_rows(rows, reference)}
    return [
        _reading(row, mechanisms.get(row.variant)) for row in paired if row.variant != reference
    ]


def _reading(row: PairedRow, mechanism: MechanismRow | None) -> Reading:
    channel = mechanism.channel if mechanism is not None else NOT_MEASURED
    return Reading(
        row.variant,
        _verdict(row.pool),
        _verdict(row.heldout),
        channel,
        reason(row.pool, mechanism),
    )


def _verdict(difference: PairedDifference | None) -> str:
    return NOT_MEASURED if difference is None else difference.verdict()


def reason(pool: PairedDifference | None, mechanism: MechanismRow | None) -> str:
    """Why the pool difference is or is not separated from 0, in words with its figures."""
    interval = None if pool is None else pool.interval
    if pool is None or interval is None:
        return "no seed measured both runs' final windows"
    if not interval.defined:
        return f"one paired seed (Δ {interval.mean:+.3f}): no interval over seeds"
    shown = f"Δ {interval.mean:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}], {pool.signs()}"
    if pool.separated:
        side = "below" if interval.high < 0 else "above"
        return f"separated: the 95 % t interval over seeds lies {side} 0 ({shown})"
    if mechanism is not None and mechanism.channel == NO_CHANNEL:
        return f"not separated: no channel at this scale ({_channel_figure(mechanism)}); {shown}"
    half = (interval.high - interval.low) / 2
    acts = mechanism is not None and mechanism.channel == ACTS
    lead = "the mechanism acts, but the" if acts else "the"
    return (
        f"not separated: {lead} difference lies inside what {interval.n} paired seeds "
        f"resolve (95 % half-width {half:.3f} from the per-seed differences' SD "
        f"{interval.sd:.3f}); {shown}"
    )


def _channel_figure(mechanism: MechanismRow) -> str:
    if not mechanism.figures:
        return "no figure measured"
    name = mechanism.figures[0]
    value = format_figure(name, mechanism.channel_value)
    return f"{name} {value} < {format_figure(name, mechanism.floor)}, {mechanism.rule}"


def _reading_columns(rows: Sequence[Reading]) -> Columns:
    return [
        ("variant", [r.variant for r in rows]),
        (f"pool vs {REFERENCE}", [r.pool for r in rows]),
        (f"held-out vs {REFERENCE}", [r.heldout for r in rows]),
        ("mechanism", [r.channel for r in rows]),
        ("why, measured (pool)", [r.reason for r in rows]),
    ]


def reading_table(rows: Sequence[Reading], title: str = "each variant against full") -> Table:
    """One rich row per variant."""
    return columns_table(_reading_columns(rows), title)


def reading_markdown(rows: Sequence[Reading]) -> str:
    """One markdown row per variant."""
    return columns_markdown(_reading_columns(rows))
