"""Tests for ``arctic_swe.metrics._record``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.metrics import MetricsError, MetricsLog, UpdateMetrics

Record = Callable[..., UpdateMetrics]


def test_log_round_trip_and_cursor(make_record: Record, tmp_path: Path) -> None:
    log = MetricsLog(tmp_path / "metrics.jsonl")
    assert log.count() == 0
    written = [make_record(i, i / 10) for i in range(1, 5)]
    cursors = [log.append(r) for r in written]
    assert cursors == [1, 2, 3, 4]
    assert log.read() == written


def test_truncate_cuts_back_to_the_checkpoint_cursor(make_record: Record, tmp_path: Path) -> None:
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for i in range(1, 6):
        log.append(make_record(i, 0.5))
    log.truncate(3)
    assert [r.step for r in log.read()] == [1, 2, 3]


def test_non_finite_figures_and_corrupt_lines_are_refused(
    make_record: Record, tmp_path: Path
) -> None:
    with pytest.raises(MetricsError, match="mismatch_kl"):
        make_record(1, 0.5, mismatch_kl=float("nan"))
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n')
    with pytest.raises(MetricsError, match="lacks"):
        MetricsLog(path).read()
    path.write_text("{not json\n")
    with pytest.raises(MetricsError, match=":1:"):
        MetricsLog(path).read()


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.integers(0, 8))
def test_truncate_keeps_a_prefix(
    make_record: Record, tmp_path_factory: pytest.TempPathFactory, rewards: list[float], keep: int
) -> None:
    log = MetricsLog(tmp_path_factory.mktemp("m") / "metrics.jsonl")
    for step, reward in enumerate(rewards, 1):
        log.append(make_record(step, reward))
    log.truncate(keep)
    assert [r.reward for r in log.read()] == rewards[:keep]


def test_old_lines_without_the_pool_fields_still_load(make_record: Record, tmp_path: Path) -> None:
    """A metrics.jsonl written before the measured pool evaluation reads back with defaults."""
    import json

    row = json.loads(make_record(1, 0.5).to_json())
    new = ("replay_adjusted", "pool_success", "pool_success_low", "pool_success_high",
           "pool_eval_version", "pool_eval_step", "pool_eval_solved", "pool_eval_rollouts",
           "pool_eval_seconds")  # fmt: skip
    for name in new:
        row.pop(name)
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (record,) = MetricsLog(path).read()
    assert (record.pool_success, record.pool_eval_rollouts, record.replay_adjusted) == (-1, 0, -1)


def test_amend_sets_fields_on_one_line_and_keeps_the_cursor(
    make_record: Record, tmp_path: Path
) -> None:
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for i in range(1, 4):
        log.append(make_record(i, 0.5))
    log.amend(2, {"pool_success": 0.25, "pool_eval_rollouts": 8, "pool_eval_step": 2})
    records = log.read()
    assert log.count() == 3
    assert [r.pool_success for r in records] == [-1.0, 0.25, -1.0]
    with pytest.raises(MetricsError, match="no line for update 9"):
        log.amend(9, {"pool_success": 0.5})
    with pytest.raises(MetricsError, match="unknown"):
        log.amend(1, {"nope": 1})
    with pytest.raises(MetricsError, match="not finite"):
        log.amend(1, {"pool_success": float("nan")})
    assert log.read() == records  # a refused change leaves the file as it was


def test_replay_feedback_counts_round_trip_and_old_lines_read_as_none(
    make_record: Record, tmp_path: Path
) -> None:
    """``replay_probes`` / ``reactivated`` (deck.reactivate_below) are logged per update; a log
    written before them reads back with 0 for both."""
    import json

    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.append(make_record(1, 0.5, replay_probes=2, reactivated=1))
    old = json.loads(make_record(2, 0.5).to_json())
    del old["replay_probes"], old["reactivated"]
    with log.path.open("a") as handle:
        handle.write(json.dumps(old) + "\n")
    first, second = log.read()
    assert (first.replay_probes, first.reactivated) == (2, 1)
    assert (second.replay_probes, second.reactivated) == (0, 0)
