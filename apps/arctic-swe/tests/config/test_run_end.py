"""Tests for ``arctic_swe.config._run_end``: the run-end record round-trips, a broken file is a
typed error, and a run without one reads as in progress."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.config import (
    EndReason,
    RunDir,
    RunDirError,
    RunEnd,
    clear_run_end,
    read_run_end,
    write_run_end,
)

counts = st.integers(min_value=0, max_value=10**6)


@given(st.sampled_from(list(EndReason)), counts, counts, counts, counts)
def test_a_run_end_round_trips(
    reason: EndReason, step: int, updates: int, retired: int, pool: int
) -> None:
    end = RunEnd(reason, step, updates, retired, pool)
    with tempfile.TemporaryDirectory() as root:
        run = RunDir(Path(root))
        write_run_end(run, end)
        assert read_run_end(run) == end
        assert end.early == (step < updates)
        clear_run_end(run)
        assert read_run_end(run) is None


def test_no_record_means_in_progress_or_interrupted(tmp_path: Path) -> None:
    assert read_run_end(RunDir(tmp_path)) is None


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"reason": "bored", "step": 1, "updates": 2, "retired": 0, "pool_size": 3}',
        '{"reason": "updates", "step": -1, "updates": 2, "retired": 0, "pool_size": 3}',
        '{"reason": "updates", "step": true, "updates": 2, "retired": 0, "pool_size": 3}',
        '{"reason": "updates", "updates": 2, "retired": 0, "pool_size": 3}',
        "[1, 2]",
    ],
)
def test_a_broken_record_is_a_typed_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "finished.json").write_text(text)
    with pytest.raises(RunDirError, match="not a run end record"):
        read_run_end(RunDir(tmp_path))


def test_the_description_says_why_the_curve_stops() -> None:
    exhausted = RunEnd(EndReason.DECK_EXHAUSTED, 109, 360, 16, 16)
    assert exhausted.describe() == (
        "stopped at update 109 of 360: every pool task retired (16 of 16; deck exhausted), "
        "nothing left to train"
    )
    assert RunEnd(EndReason.UPDATES, 36, 36, 4, 16).describe() == "finished: 36 of 36 updates"
    assert "no training group" in RunEnd(EndReason.NO_GROUPS, 3, 36, 1, 16).describe()
    stalled = RunEnd(EndReason.STALLED, 103, 360, 13, 16).describe()
    assert stalled.startswith("stopped at update 103 of 360: stalled, the last updates had no")
    assert "13 of 16 tasks retired" in stalled
