"""Tests for ``arctic_swe.metrics._seeds``: labels with a seed are grouped by variant, the
per-seed final-window values and the pooled interval come out of the rows' verdicts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe._wilson import wilson_interval
from arctic_swe.metrics import (
    VerdictRule,
    comparison_row,
    seed_groups,
    seeds_markdown,
    split_seed_label,
)

from .conftest import evaluations, record

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20)


@given(names, st.integers(0, 10**6))
def test_a_seeded_label_splits_back(variant: str, seed: int) -> None:
    assert split_seed_label(f"{variant}/seed-{seed}") == (variant, seed)


@pytest.mark.parametrize("label", ["full", "full/seed-", "full/seed-x", "seed-3", "a/b"])
def test_labels_without_a_seed_are_not_seeded(label: str) -> None:
    assert split_seed_label(label) is None


def _run(label: str, solved: list[int]):  # type: ignore[no-untyped-def]
    """A run of 6 updates evaluated at 0 (nothing solved) and every update after it: 16 tasks
    x 2 samples, the first ``solved[i]`` rollouts solved at update i + 1."""
    cells = {0: ["00"] * 16}
    for step, count in enumerate(solved, 1):
        flat = "1" * count + "0" * (32 - count)
        cells[step] = [flat[2 * k : 2 * k + 2] for k in range(16)]
    records = [record(step, 0.5) for step in range(1, 7)]
    return comparison_row(label, records, evaluations(cells), VerdictRule(updates=6, every=1))


def test_seeds_are_grouped_per_variant_with_their_final_windows_and_the_pool() -> None:
    # six updates: the final window is updates 5 and 6 (> 2/3 of 6), the reference 3 and 4
    rows = [
        _run("full/seed-0", [8, 16, 24, 24, 24, 28]),  # climbed and held: 52/64 in the end
        _run("full/seed-1", [8, 16, 24, 20, 12, 10]),  # climbed, then fell: 22/64
        _run("clip/seed-0", [8, 8, 8, 8, 8, 8]),
        _run("unseeded", [1, 1, 1, 1, 1, 1]),  # left out: not a seeded label
    ]
    full, clip = seed_groups(rows)
    assert (full.variant, full.seeds, clip.variant, clip.seeds) == ("full", (0, 1), "clip", (0,))
    assert full.final_rates == pytest.approx((52 / 64, 22 / 64))
    assert (full.held, full.measured) == (1, 2)
    assert (full.solved, full.rollouts) == (74, 128)
    assert (full.low, full.high) == pytest.approx(wilson_interval(74, 128))
    assert full.spread == pytest.approx(30 / 64)
    assert clip.spread is None  # one seed: no spread
    cells = seeds_markdown([full, clip]).splitlines()[2].strip("| ").split(" | ")
    assert cells[:3] == ["full", "2", "1 of 2"]
    assert cells[3] == "0: 0.812, 1: 0.344"
    assert cells[5].endswith("(74 / 128)")


def test_a_seed_without_pool_evaluations_is_not_measured() -> None:
    rows = [comparison_row("full/seed-4", [record(1, 0.5), record(2, 0.5)])]
    (group,) = seed_groups(rows)
    assert group.final_rates == (None,)
    assert (group.measured, group.rollouts) == (0, 0)
    cells = seeds_markdown([group]).splitlines()[2].strip("| ").split(" | ")
    assert cells[2:] == ["0 of 0", "4: not measured", "-", "not measured"]
