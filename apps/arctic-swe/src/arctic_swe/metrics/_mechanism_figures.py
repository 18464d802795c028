"""The figures of one run that the mechanism table (:mod:`arctic_swe.metrics._mechanisms`)
reads, each from ``metrics.jsonl``'s :class:`UpdateMetrics`, and how several seeds combine.

A figure is ``None`` where the run did not measure it (``-1`` sentinels of the numerics fields,
a run with one engine for placement, no lag-0 update for the lag-0 KL).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from arctic_swe.metrics._health import INVALID_ENDINGS, zero_gradient
from arctic_swe.metrics._record import UpdateMetrics

Figures = dict[str, float | None]

#: Figure name -> (how it is shown, how the seeds of a variant combine).
FIGURES: dict[str, tuple[str, str]] = {
    "masked": ("percent", "mean"),  # mean masked (clipped) share of trained tokens
    "masked updates": ("percent", "mean"),  # share of updates with any masked token
    "omega min": ("ratio", "min"),  # extremes of ω = π_train / π_rollout
    "omega max": ("ratio", "max"),
    "token lag": ("ratio", "mean"),  # mean lag of trained tokens (versions)
    "lag mean": ("ratio", "mean"),  # mean group lag
    "lag max": ("count", "max"),
    "lagged updates": ("percent", "mean"),  # share of updates with a group lag > 0
    "stale share": ("percent", "mean"),  # stale drops / (groups trained + dropped)
    "stale drops": ("count", "mean"),  # per run
    "lag-0 KL": ("sci", "mean"),  # mismatch KL over updates without lag
    "audit KL": ("sci", "mean"),  # the mismatch audit, whole model
    "DeltaNet KL": ("sci", "mean"),  # ... Gated DeltaNet layers only
    "attention KL": ("sci", "mean"),  # ... softmax attention only
    "imbalance": ("percent", "mean"),  # (most - fewest groups on an engine) / groups
    "engines": ("count", "max"),
    "retired": ("count", "mean"),  # tasks retired at the run's end
    "evictions": ("count", "mean"),  # retirement events (a task retired again counts again)
    "zero-gradient updates": ("percent", "mean"),
    "invalid endings": ("percent", "mean"),  # invalid-format or duplicate-call endings
}


def format_figure(name: str, value: float | None) -> str:
    """A figure as the tables show it (``"not measured"`` for ``None``)."""
    if value is None:
        return "not measured"
    kind = FIGURES[name][0]
    if kind == "percent":
        return f"{100 * value:.2f} %"
    if kind == "sci":
        return f"{value:.1e}"
    if kind == "count":
        return f"{value:.0f}" if value == int(value) else f"{value:.1f}"
    return f"{value:.3f}"


def reduce_figures(runs: Sequence[Mapping[str, float | None]]) -> Figures:
    """The figures of several seeds of one variant, each combined as :data:`FIGURES` says
    (seeds where a figure is ``None`` are left out of it)."""
    combined: Figures = {}
    for name in dict.fromkeys(key for run in runs for key in run):
        values = [v for run in runs if (v := run.get(name)) is not None]
        how = FIGURES[name][1]
        combined[name] = (
            None if not values
            else min(values) if how == "min"
            else max(values) if how == "max"
            else math.fsum(values) / len(values)
        )  # fmt: skip
    return combined


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _measured(values: Sequence[float]) -> list[float]:
    return [v for v in values if v >= 0]  # -1: not measured on that update


def mask(records: Sequence[UpdateMetrics]) -> Figures:
    """IcePop mask (or PPO clip): masked share of tokens, of updates, ω's extremes."""
    lows = _measured([r.omega_min for r in records])
    highs = _measured([r.omega_max for r in records])
    return {
        "masked": _mean([r.masked_frac for r in records]),
        "masked updates": _share([r.masked_frac > 0 for r in records]),
        "omega min": min(lows) if lows else None,
        "omega max": max(highs) if highs else None,
    }


def lag(records: Sequence[UpdateMetrics]) -> Figures:
    """Policy lag: per trained token, per group, and the share of updates with any."""
    return {
        "token lag": _mean([r.lag_token_mean for r in records]),
        "lag mean": _mean([r.lag_mean for r in records]),
        "lag max": float(max((r.lag_max for r in records), default=0)),
        "lagged updates": _share([r.lag_max > 0 for r in records]),
    }


def stale(records: Sequence[UpdateMetrics]) -> Figures:
    """Groups the max_off_policy cap dropped (per update in the log), total and share."""
    drops = sum(r.stale_dropped for r in records)
    seen = drops + sum(r.groups for r in records)
    return {"stale share": drops / seen if seen else None, "stale drops": float(drops)}


def numerics(records: Sequence[UpdateMetrics]) -> Figures:
    """Engine-trainer mismatch where no lag adds to it, and the audit by layer type."""
    return {
        "lag-0 KL": _mean([r.mismatch_kl for r in records if r.lag_max == 0]),
        "audit KL": _mean(_measured([r.kl_audit_overall for r in records])),
        "DeltaNet KL": _mean(_measured([r.kl_linear_attention for r in records])),
        "attention KL": _mean(_measured([r.kl_full_attention for r in records])),
    }


def placement(records: Sequence[UpdateMetrics]) -> Figures:
    """Mean over updates of (most - fewest groups finished on one engine) / groups, every
    engine the run ever used counted (an engine that finished none in an update has 0)."""
    engines = sorted({engine for r in records for engine in r.engine_groups})
    shares = []
    for record in records:
        counts = [record.engine_groups.get(engine, 0) for engine in engines]
        total = sum(counts)
        if len(engines) >= 2 and total > 0:
            shares.append((max(counts) - min(counts)) / total)
    return {"imbalance": _mean(shares), "engines": float(len(engines))}


def eviction(records: Sequence[UpdateMetrics]) -> Figures:
    """Tasks retired at the end, retirement events, and updates without a gradient."""
    ordered = sorted(records, key=lambda r: r.step)
    events, before = 0, 0
    for record in ordered:
        events += max(0, record.retired - before)
        before = record.retired
    return {
        "retired": float(ordered[-1].retired) if ordered else None,
        "evictions": float(events),
        "zero-gradient updates": _share([zero_gradient(r) for r in records]),
    }


def endings(records: Sequence[UpdateMetrics]) -> Figures:
    """Share of rollouts the gate ended for an invalid format or a duplicate call."""
    rollouts = sum(r.rollouts for r in records)
    invalid = sum(r.terminations.get(name, 0) for r in records for name in INVALID_ENDINGS)
    return {"invalid endings": invalid / rollouts if rollouts else None}
