"""Tests for ``arctic_swe.metrics._mechanisms`` and ``_mechanism_figures``: each ablation's
channel measured from hand-built updates, in the variant and in full, averaged over seeds, and
"acts" / "no channel at this scale" decided at the declared floor."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import (
    ACTS,
    MECHANISMS,
    NO_CHANNEL,
    ComparisonRow,
    MechanismRow,
    channel_value,
    comparison_row,
    decide,
    format_figure,
    mechanism_markdown,
    mechanism_rows,
)
from arctic_swe.metrics._mechanism_figures import (
    endings,
    eviction,
    lag,
    mask,
    numerics,
    placement,
    reduce_figures,
    stale,
)
from arctic_swe.metrics._mechanisms import (
    KL_FLOOR,
    MASKED_FLOOR,
    PLACEMENT_FLOOR,
    RETIRED_FLOOR,
)

from .conftest import record


def _run(label: str, *updates: dict[str, Any]) -> ComparisonRow:
    """A run whose update i + 1 has the fields ``updates[i]``."""
    return comparison_row(
        label, [record(step, 0.5, **fields) for step, fields in enumerate(updates, 1)]
    )


def _row(rows: list[ComparisonRow], variant: str) -> MechanismRow:
    return {row.variant: row for row in mechanism_rows(rows)}[variant]


def test_the_mask_figures() -> None:
    records = [
        record(1, 0.5, masked_frac=0.0, omega_min=-1.0, omega_max=-1.0),  # not audited
        record(2, 0.5, masked_frac=0.01, omega_min=0.5, omega_max=1.5),
        record(3, 0.5, masked_frac=0.02, omega_min=0.8, omega_max=3.0),
    ]
    assert mask(records) == pytest.approx(
        {"masked": 0.01, "masked updates": 2 / 3, "omega min": 0.5, "omega max": 3.0}
    )
    assert mask([record(1, 0.5, omega_min=-1.0)])["omega min"] is None


def test_the_lag_and_stale_figures() -> None:
    records = [
        record(1, 0.5, lag_token_mean=0.0, lag_mean=0.0, lag_max=0, stale_dropped=0, groups=4),
        record(2, 0.5, lag_token_mean=0.3, lag_mean=0.5, lag_max=2, stale_dropped=1, groups=3),
    ]
    assert lag(records) == pytest.approx(
        {"token lag": 0.15, "lag mean": 0.25, "lag max": 2.0, "lagged updates": 0.5}
    )
    assert stale(records) == pytest.approx({"stale share": 1 / 8, "stale drops": 1.0})


def test_the_numerics_figures_use_lag_0_updates_and_skip_unaudited_ones() -> None:
    records = [
        record(1, 0.5, lag_max=0, mismatch_kl=2e-9, kl_audit_overall=-1.0),
        record(2, 0.5, lag_max=1, mismatch_kl=5e-3, kl_audit_overall=4e-9,
               kl_linear_attention=6e-9, kl_full_attention=1e-12),
        record(3, 0.5, lag_max=0, mismatch_kl=4e-9, kl_audit_overall=-1.0),
    ]  # fmt: skip
    figures = numerics(records)
    assert figures["lag-0 KL"] == pytest.approx(3e-9)  # update 2's lag does not count
    assert figures["audit KL"] == pytest.approx(4e-9)
    assert figures["DeltaNet KL"] == pytest.approx(6e-9)
    assert figures["attention KL"] == pytest.approx(1e-12)
    assert numerics([record(1, 0.5, lag_max=1)])["lag-0 KL"] is None


def test_placement_counts_an_engine_that_finished_nothing() -> None:
    records = [
        record(1, 0.5, engine_groups={"e0": 2, "e1": 2}),  # balanced
        record(2, 0.5, engine_groups={"e0": 4}),  # e1 finished none: 4 of 4 off balance
    ]
    assert placement(records) == pytest.approx({"imbalance": 0.5, "engines": 2.0})
    assert placement([record(1, 0.5, engine_groups={"e0": 4})])["imbalance"] is None


def test_eviction_counts_retirements_and_updates_without_gradient() -> None:
    records = [
        record(1, 0.5, retired=0),
        record(2, 0.5, retired=2, grad_norm=0.0),
        record(3, 0.5, retired=1),  # a forgotten task came back
        record(4, 0.5, retired=3, grad_norm=0.0),
    ]
    assert eviction(records) == pytest.approx(
        {"retired": 3.0, "evictions": 4.0, "zero-gradient updates": 0.5}
    )


def test_endings_count_invalid_and_duplicate_calls() -> None:
    records = [
        record(1, 0.5, rollouts=16, terminations={"invalid_format": 2, "submitted": 14}),
        record(2, 0.5, rollouts=16, terminations={"duplicate_call": 1, "turn_budget": 5}),
    ]
    assert endings(records) == pytest.approx({"invalid endings": 3 / 32})


def test_the_floor_decides_acts_from_the_floor_up() -> None:
    for floor in (MASKED_FLOOR, KL_FLOOR, PLACEMENT_FLOOR, RETIRED_FLOOR):
        assert decide(floor, floor) == ACTS
        assert decide(math.nextafter(floor, 0.0), floor) == NO_CHANNEL
    assert decide(None, 1.0) == "not measured"


@pytest.mark.parametrize(
    ("masked", "channel"),
    [(MASKED_FLOOR, ACTS), (math.nextafter(MASKED_FLOOR, 0.0), NO_CHANNEL), (0.0, NO_CHANNEL)],
)
def test_clip_has_a_channel_only_where_the_mask_fires_at_the_floor(
    masked: float, channel: str
) -> None:
    rows = [
        _run("full", {"masked_frac": masked}, {"masked_frac": masked}),
        _run("clip", {"masked_frac": 0.0}, {"masked_frac": 0.0}),
    ]
    row = _row(rows, "clip")
    assert row.in_reference["masked"] == pytest.approx(masked)
    assert row.channel_value == pytest.approx(masked)  # the larger of the two
    assert row.channel == channel


def test_seeds_are_averaged_before_the_floor() -> None:
    # full masks 0.2 % and 0.4 % on its seeds, clip 0.1 % and 0.5 %: averages 0.3 % both
    rows = [
        _run("full/seed-0", {"masked_frac": 0.002, "omega_min": 0.6}),
        _run("full/seed-1", {"masked_frac": 0.004, "omega_min": 0.4}),
        _run("clip/seed-0", {"masked_frac": 0.001}),
        _run("clip/seed-1", {"masked_frac": 0.005}),
    ]
    row = _row(rows, "clip")
    assert row.seeds == 2
    assert row.in_variant["masked"] == pytest.approx(0.003)
    assert row.in_reference["masked"] == pytest.approx(0.003)
    assert row.in_reference["omega min"] == pytest.approx(0.4)  # extremes stay extremes
    assert row.channel == NO_CHANNEL


def test_session_hash_acts_through_placement_beyond_least_loaded() -> None:
    balanced = {"engine_groups": {"e0": 2, "e1": 2}}
    rows = [
        _run("full", balanced, balanced),
        _run("session-hash", {"engine_groups": {"e0": 3, "e1": 1}}, balanced),
    ]
    row = _row(rows, "session-hash")
    assert row.channel_value == pytest.approx(0.25)  # (2 / 4 + 0) / 2 minus full's 0
    assert row.channel == ACTS
    rows[1] = _run("session-hash", balanced, balanced)
    assert _row(rows, "session-hash").channel == NO_CHANNEL


def test_no_eviction_has_a_channel_only_when_full_retires_a_task() -> None:
    rows = [_run("full", {"retired": 0}), _run("no-eviction", {"retired": 0})]
    assert _row(rows, "no-eviction").channel == NO_CHANNEL
    rows[0] = _run("full", {"retired": 0}, {"retired": 1})
    row = _row(rows, "no-eviction")
    assert (row.channel_value, row.channel) == (1.0, ACTS)


def test_bf16_state_and_the_variants_without_a_measure() -> None:
    rows = [
        _run("full", {"lag_max": 0, "mismatch_kl": 1e-13}),
        _run("bf16-state", {"lag_max": 0, "mismatch_kl": 2e-13}),
        _run("rollout-mean", {}),
        _run("mystery", {}),
    ]
    found = {row.variant: row for row in mechanism_rows(rows)}
    assert found["bf16-state"].channel == NO_CHANNEL
    assert found["rollout-mean"].channel == "not measured"
    assert found["mystery"].channel == "not measured"
    assert found["full"].mechanism == MECHANISMS["full"].name


def test_a_rule_that_needs_full_without_full_is_not_measured() -> None:
    hashed = MECHANISMS["session-hash"]
    assert channel_value(hashed, {"imbalance": 0.5}, {}) is None
    assert channel_value(MECHANISMS["clip"], {"masked": 0.1}, {}) == 0.1


figure_values = st.one_of(st.none(), st.floats(0.0, 10.0))


@given(st.lists(st.fixed_dictionaries({"masked": figure_values, "omega min": figure_values}),
                min_size=1, max_size=5), st.randoms(use_true_random=False))  # fmt: skip
def test_combining_seeds_ignores_their_order_and_stays_within_them(
    runs: list[dict[str, float | None]], rng: Any
) -> None:
    combined = reduce_figures(runs)
    shuffled = list(runs)
    rng.shuffle(shuffled)
    assert reduce_figures(shuffled) == pytest.approx(combined)
    masked = [run["masked"] for run in runs if run["masked"] is not None]
    if masked:
        value = combined["masked"]
        assert value is not None
        assert min(masked) - 1e-12 <= value <= max(masked) + 1e-12
    else:
        assert combined["masked"] is None


def test_the_markdown_names_each_mechanism_its_figures_and_the_floor() -> None:
    rows = [
        _run("full", {"masked_frac": 0.01, "stale_dropped": 1, "groups": 4}),
        _run("clip", {"masked_frac": 0.0}),
    ]
    lines = mechanism_markdown(mechanism_rows(rows)).splitlines()
    headers = lines[0].strip("| ").split(" | ")
    cells = [dict(zip(headers, line.strip("| ").split(" | "), strict=True)) for line in lines[2:]]
    full, clip = cells
    assert full["variant"] == "full"
    assert full["in the variant"] == "stale share 20.00 %, stale drops 1"
    assert full["channel"] == ACTS
    assert clip["in the variant"].startswith("masked 0.00 %, masked updates 0.00 %")
    assert clip["in full"].startswith("masked 1.00 %, masked updates 100.00 %")
    assert clip["channel if"] == "masked >= 0.50 % (larger of the two)"
    assert clip["channel"] == ACTS
    assert format_figure("lag-0 KL", 1.5e-13) == "1.5e-13"
    assert format_figure("retired", 2.5) == "2.5"
    assert format_figure("retired", None) == "not measured"
