"""Tests for ``arctic_swe.metrics._labels``: one distinct label per run, never a dropped run."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import MetricsError, run_labels


def test_same_named_runs_get_their_shortest_distinct_suffix() -> None:
    runs = [Path("/x/a/overfit"), Path("/x/b/overfit"), Path("/x/c/full")]
    assert run_labels(runs) == ["a/overfit", "b/overfit", "full"]


def test_labels_override_in_order_and_duplicates_are_refused() -> None:
    runs = [Path("/x/a/overfit"), Path("/x/b/overfit")]
    assert run_labels(runs, ["base"]) == ["base", "b/overfit"]
    with pytest.raises(MetricsError, match="share the label"):
        run_labels(runs, ["b/overfit"])
    with pytest.raises(MetricsError, match="given twice"):
        run_labels([Path("/x/a"), Path("/x/a")])


NAME = st.sampled_from(["a", "b", "run", "overfit"])


@given(st.lists(st.lists(NAME, min_size=1, max_size=4), min_size=1, max_size=6, unique_by=tuple))
def test_labels_are_distinct_suffixes_of_their_runs(paths: list[list[str]]) -> None:
    runs = [Path("/root", *parts) for parts in paths]
    labels = run_labels(runs)
    assert len(labels) == len(runs)  # none dropped
    assert len(set(labels)) == len(labels)
    for run, label in zip(runs, labels, strict=True):
        assert run.as_posix().endswith("/" + label)
