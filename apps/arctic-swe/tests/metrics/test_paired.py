"""Tests for ``arctic_swe.metrics._paired``: each variant's final-window success minus full's,
seed by seed, with a t interval over seeds — against a slow reference that counts rollouts cell
by cell, and as properties (swapping the two negates it, the seeds' order and a seed only full
ran change nothing)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import (
    ComparisonRow,
    EvalRecord,
    PairedRow,
    VerdictRule,
    comparison_row,
    final_window,
    paired_difference,
    paired_markdown,
    paired_rows,
    seed_label,
)

from .conftest import evaluation, record

UPDATES = 6  # the final window (2/3, 1] of 6 updates holds steps 5 and 6
STEPS = (0, 2, 4, 5, 6)  # evaluated steps: 4 is the last one outside the final window
ROLLOUTS = 16  # 4 tasks x 4 samples per evaluation

#: Student's t 0.975 quantiles (printed tables) by degrees of freedom.
T975 = {1: 12.7062047, 2: 4.3026527, 3: 3.1824463, 4: 2.7764451, 5: 2.5705818}


def _run(
    label: str, pool: Sequence[int], heldout: Sequence[int] = (), updates: int = UPDATES
) -> ComparisonRow:
    """A run of ``updates`` updates; ``pool[i]`` / ``heldout[i]`` solved of 16 at STEPS[i]."""
    evaluations = [evaluation("pool", step, n) for step, n in zip(STEPS, pool, strict=False)]
    evaluations += [evaluation("heldout", s, n) for s, n in zip(STEPS, heldout, strict=False)]
    records = [record(step, 0.5) for step in range(1, updates + 1)]
    return comparison_row(label, records, evaluations)


def _reference(
    variant: Mapping[int, Sequence[EvalRecord]], full: Mapping[int, Sequence[EvalRecord]]
) -> tuple[float, float, float]:
    """Slow and plain: each seed both ran, its final-window pool rollouts counted one cell at a
    time, the differences' mean and t interval from the printed t table."""
    differences = []
    for seed in sorted(variant):
        if seed not in full:
            continue
        rates = []
        for evaluations in (variant[seed], full[seed]):
            solved = rollouts = 0
            for item in evaluations:
                if item.split == "pool" and 3 * item.step > 2 * UPDATES and item.step <= UPDATES:
                    for cells in item.outcomes.values():
                        for cell in cells:
                            rollouts += 1
                            solved += cell == "1"
            rates.append(solved / rollouts)
        differences.append(rates[0] - rates[1])
    n = len(differences)
    mean = sum(differences) / n
    if n == 1:
        return mean, mean, mean
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    half = T975[n - 1] * math.sqrt(variance / n)
    return mean, mean - half, mean + half


solved = st.integers(0, ROLLOUTS)
seed_runs = st.dictionaries(
    st.integers(0, 20), st.lists(solved, min_size=5, max_size=5), max_size=6
)


def _rows(variant: Mapping[int, Sequence[int]], full: Mapping[int, Sequence[int]]) -> list:  # type: ignore[type-arg]
    return [_run(seed_label("full", s), pool, pool[::-1]) for s, pool in full.items()] + [
        _run(seed_label("clip", s), pool, pool[::-1]) for s, pool in variant.items()
    ]


def _clip(rows: Sequence[ComparisonRow]) -> PairedRow:
    found = {row.variant: row for row in paired_rows(rows)}
    return found["clip"]


@given(seed_runs, seed_runs)
def test_the_paired_interval_matches_a_slow_reference(
    variant: dict[int, list[int]], full: dict[int, list[int]]
) -> None:
    rows = _rows(variant, full)
    if not (variant and full):  # nothing to pair: no table, or full alone
        assert [row.variant for row in paired_rows(rows)] == (["full"] if full else [])
        return
    clip = _clip(rows)
    shared = sorted(set(variant) & set(full))
    assert clip.pool is not None
    assert clip.pool.seeds == tuple(shared)
    if not shared:
        assert clip.pool.interval is None
        return
    evaluations = {row.label: row.evaluations for row in rows}
    expected = _reference(
        {s: evaluations[seed_label("clip", s)] for s in variant},
        {s: evaluations[seed_label("full", s)] for s in full},
    )
    interval = clip.pool.interval
    assert interval is not None
    assert (interval.mean, interval.low, interval.high) == pytest.approx(expected, abs=1e-6)


@given(seed_runs, seed_runs)
def test_swapping_variant_and_full_negates_the_mean_and_the_interval(
    variant: dict[int, list[int]], full: dict[int, list[int]]
) -> None:
    if not (variant and full and set(variant) & set(full)):
        return
    ahead, swapped = _clip(_rows(variant, full)), _clip(_rows(full, variant))
    for one, other in ((ahead.pool, swapped.pool), (ahead.heldout, swapped.heldout)):
        assert one is not None
        assert other is not None
        a, b = one.interval, other.interval
        assert a is not None
        assert b is not None
        assert (a.mean, a.low, a.high) == pytest.approx((-b.mean, -b.high, -b.low), abs=1e-12)
        assert (one.below, one.above, one.ties) == (other.above, other.below, other.ties)


@given(seed_runs, seed_runs, st.randoms(use_true_random=False))
def test_the_order_of_the_seeds_changes_nothing(
    variant: dict[int, list[int]], full: dict[int, list[int]], rng: object
) -> None:
    rows = _rows(variant, full)
    shuffled = list(rows)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert sorted(paired_rows(rows), key=str) == sorted(paired_rows(shuffled), key=str)


@given(seed_runs, seed_runs, st.lists(solved, min_size=5, max_size=5))
def test_a_seed_only_full_ran_changes_nothing(
    variant: dict[int, list[int]], full: dict[int, list[int]], extra: list[int]
) -> None:
    if not (variant and full):
        return
    lone = max([*variant, *full]) + 1  # a seed the variant never ran
    before = _clip(_rows(variant, full))
    after = _clip(_rows(variant, {**full, lone: extra}))
    assert (after.pool, after.heldout, after.start) == (before.pool, before.heldout, before.start)


def test_the_window_is_the_declared_final_window_with_near_identical_weights_thinned() -> None:
    evaluations = [evaluation("pool", s, s) for s in (0, 3, 4, 5, 6)]
    window = final_window(evaluations, "pool", VerdictRule(updates=6))
    assert window is not None
    assert (window.steps, window.solved, window.rollouts) == ((5, 6), 11, 32)
    # cadence 4: an evaluation 1 update after a kept one is left out (4 and 6)
    thinned = final_window(evaluations, "pool", VerdictRule(updates=6, every=4))
    assert thinned is not None
    assert (thinned.steps, thinned.solved, thinned.rollouts) == ((5,), 5, 16)
    assert final_window([evaluation("pool", 3, 3)], "pool", VerdictRule(updates=6)) is None
    assert final_window([evaluation("pool", 6, 3)], "heldout", VerdictRule(updates=6)) is None


def test_the_runs_declared_rule_places_the_window() -> None:
    evaluations = [evaluation("pool", s, n) for s, n in zip(STEPS, [8, 8, 0, 10, 12], strict=True)]
    records = [record(step, 0.5) for step in range(1, 7)]
    planned_nine = comparison_row("full", records, evaluations, VerdictRule(updates=9))
    (row,) = paired_rows([planned_nine])  # the window (6, 9] holds no evaluation
    assert row.pool_rates == (None,)
    (row,) = paired_rows([comparison_row("full", records, evaluations, VerdictRule(updates=6))])
    assert row.pool_rates == (22 / 32,)  # 10 and 12 of 16 at steps 5 and 6


def test_signs_and_verdicts() -> None:
    base = dict.fromkeys(range(4), 0.5)
    mixed = paired_difference({0: 0.25, 1: 0.375, 2: 0.4375, 3: 0.5}, base)
    assert mixed.signs() == "3 of 4 below full, 1 tie"
    assert mixed.verdict() == "not separated"  # the tie keeps the interval over 0
    below = paired_difference({0: 0.25, 1: 0.3125, 2: 0.25, 3: 0.3125}, base)
    assert below.signs() == "4 of 4 below full"
    assert below.verdict() == "separated (below full)"
    # two seeds: t = 12.7, so only a tiny spread separates them
    above = paired_difference({0: 0.75, 1: 0.76}, {0: 0.5, 1: 0.5, 2: 0.1})
    assert (above.n, above.signs(), above.verdict()) == (2, "0 of 2 below full, 2 above",
                                                         "separated (above full)")  # fmt: skip
    one = paired_difference({0: 0.25, 1: None}, {0: 0.5, 1: 0.5})
    assert (one.n, one.verdict()) == (1, "one seed: no interval")
    none = paired_difference({5: 0.25}, {0: 0.5})
    assert (none.interval, none.signs(), none.verdict()) == (None, "not measured", "not measured")


def test_the_warm_start_check_flags_a_pair_that_does_not_share_its_start() -> None:
    rows = [
        _run("full/seed-0", [8, 8, 8, 8, 8]),
        _run("full/seed-1", [8, 8, 8, 8, 8]),
        _run("clip/seed-0", [8, 6, 4, 4, 4]),  # same start
        _run("clip/seed-1", [9, 6, 4, 4, 4]),  # one more solved at update 0
        _run("lenient/seed-0", [8, 6, 4, 4, 4]),
    ]
    rows.append(comparison_row("ungated/seed-0", rows[0].records))  # no evaluation at all
    found = {row.variant: row for row in paired_rows(rows)}
    assert list(found) == ["full", "clip", "lenient", "ungated"]
    assert found["full"].start is None  # the reference is not checked against itself
    assert found["clip"].start is not None
    assert found["clip"].start.describe() == "DIFFERS on 1 of 2 (1: 0.562 vs 0.500)"
    assert found["lenient"].start is not None
    assert found["lenient"].start.describe() == "same on 1 of 1"
    assert found["ungated"].start is not None
    assert found["ungated"].start.describe() == "not measured"


def test_without_full_there_is_nothing_to_pair() -> None:
    assert paired_rows([_run("clip/seed-0", [8, 8, 8, 8, 8])]) == []


def test_the_markdown_has_a_row_per_variant_with_full_first() -> None:
    rows = [
        _run("clip/seed-0", [8, 8, 16, 4, 4], [8] * 5),  # step 4 is outside the window
        _run("clip/seed-1", [8, 8, 16, 6, 6], [8] * 5),
        _run("full/seed-0", [8, 8, 0, 8, 8], [8] * 5),
        _run("full/seed-1", [8, 8, 0, 12, 12], [8] * 5),
        _run("full", [8] * 5),  # a run without --seeds pairs with none of them
    ]
    lines = paired_markdown(paired_rows(rows)).splitlines()
    headers = lines[0].strip("| ").split(" | ")
    cells = {
        line.strip("| ").split(" | ")[0]: dict(
            zip(headers, line.strip("| ").split(" | "), strict=True)
        )
        for line in lines[2:]
    }
    assert list(cells) == ["full", "clip"]
    full, clip = cells["full"], cells["clip"]
    assert full["seeds"] == "3"
    assert full["pool, final window per seed"] == "base: 0.500, 0: 0.500, 1: 0.750"
    assert full["spread"] == "0.250"
    assert full["Δ pool per seed (variant - full)"] == "reference"
    assert clip["pool, final window per seed"] == "0: 0.250, 1: 0.375"
    assert clip["Δ pool per seed (variant - full)"] == "0: -0.250, 1: -0.375"
    # mean -0.3125, sd 0.0884, half-width 12.706 x 0.0884 / sqrt 2
    assert clip["Δ pool mean, 95 % t CI over seeds"] == "-0.312 [-1.107, +0.482]"
    assert clip["pool signs"] == "2 of 2 below full"
    assert clip["pool vs full"] == "not separated"
    assert clip["held-out, final window per seed"] == "0: 0.500, 1: 0.500"
    assert clip["Δ held-out mean, 95 % t CI"] == "+0.000 [+0.000, +0.000]"
    assert clip["held-out signs"] == "0 of 2 below full, 2 ties"
    assert clip["held-out vs full"] == "not separated"
    assert clip["warm start (update 0) vs full"] == "same on 2 of 2"
    assert full["warm start (update 0) vs full"] == "reference"
