"""Tests for ``arctic_swe.warmstart._resume``: the staging directory an interrupted warm start
resumes from."""

from pathlib import Path

import torch

from arctic_swe.harness import Trajectory
from arctic_swe.warmstart import StageCheckpoint, WarmStartStaging, staging_dir


def _trajectory(task_id: str) -> Trajectory:
    return Trajectory(task_id, 1, (1, 2), (False, True), (0.0, 0.0), (-1, -1), (), "submitted",
                      1.0, 1.0)  # fmt: skip


def test_staging_sits_beside_the_output_and_is_hidden(tmp_path: Path) -> None:
    assert staging_dir(tmp_path / "runs" / "policy") == tmp_path / "runs" / ".policy.partial"


def test_same_settings_resume_and_other_settings_start_over(tmp_path: Path) -> None:
    out = tmp_path / "policy"
    first = WarmStartStaging(out, {"tasks": ["a", "b"], "seed": 0})
    assert not first.resumed
    first.record_expert(_trajectory("a"))
    again = WarmStartStaging(out, {"tasks": ["a", "b"], "seed": 0})
    assert again.resumed
    assert [t.task_id for t in again.finished_expert()] == ["a"]
    other = WarmStartStaging(out, {"tasks": ["a", "b"], "seed": 1})
    assert not other.resumed
    assert other.finished_expert() == []


def test_a_torn_last_expert_line_is_dropped_and_later_lines_stay_readable(
    tmp_path: Path,
) -> None:
    staging = WarmStartStaging(tmp_path / "policy", {"tasks": ["a", "b", "c"]})
    staging.record_expert(_trajectory("a"))
    with (staging.root / "expert.jsonl").open("a") as handle:
        handle.write(_trajectory("b").to_json()[:40])  # killed mid-write
    assert [t.task_id for t in staging.finished_expert()] == ["a"]
    staging.record_expert(_trajectory("c"))
    assert [t.task_id for t in staging.finished_expert()] == ["a", "c"]


def test_a_stage_checkpoint_round_trips_and_is_due_every_n_steps(tmp_path: Path) -> None:
    checkpoint = StageCheckpoint(tmp_path / "sft.pt", every=3)
    assert checkpoint.load() is None
    checkpoint.save({"step": 3, "weights": torch.arange(4.0)})
    loaded = checkpoint.load()
    assert loaded is not None
    assert loaded["step"] == 3
    assert torch.equal(loaded["weights"], torch.arange(4.0))
    assert [n for n in range(1, 8) if checkpoint.due(n, total=7)] == [3, 6, 7]
    assert list(tmp_path.iterdir()) == [tmp_path / "sft.pt"]  # no staging file left
