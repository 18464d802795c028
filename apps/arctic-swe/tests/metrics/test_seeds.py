"""Tests for ``arctic_swe.metrics._seeds``: ``<variant>/seed-<n>`` labels split back, and runs
group by variant then seed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import seed_label, split_seed_label, variant_seed
from arctic_swe.metrics._seeds import by_variant

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20)


@given(names, st.integers(0, 10**6))
def test_a_seeded_label_splits_back(variant: str, seed: int) -> None:
    assert split_seed_label(seed_label(variant, seed)) == (variant, seed)
    assert variant_seed(seed_label(variant, seed)) == (variant, seed)


@pytest.mark.parametrize("label", ["full", "full/seed-", "full/seed-x", "seed-3", "a/b"])
def test_labels_without_a_seed_are_not_seeded(label: str) -> None:
    assert split_seed_label(label) is None
    assert variant_seed(label) == (label, None)


def test_runs_group_by_variant_in_first_seen_order() -> None:
    grouped = by_variant(
        [("clip/seed-1", "a"), ("full/seed-0", "b"), ("clip/seed-0", "c"), ("full", "d")]
    )
    assert list(grouped) == ["clip", "full"]
    assert grouped["clip"] == {1: "a", 0: "c"}
    assert grouped["full"] == {0: "b", None: "d"}
