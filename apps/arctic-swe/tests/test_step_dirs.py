"""The shared atomic ``step-N`` + ``LATEST`` protocol (checkpoints, loop state, deck)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe._step_dirs import (
    LATEST,
    prune_steps,
    read_latest,
    staged_dir,
    write_latest,
    write_text_atomic,
)


def test_a_clean_exit_replaces_the_target_and_leaves_no_staging(tmp_path: Path) -> None:
    (tmp_path / "step-1").mkdir()
    (tmp_path / "step-1" / "old.txt").write_text("old")
    with staged_dir(tmp_path, "step-1") as staging:
        assert staging.parent == tmp_path
        assert staging.name.startswith(".step-1.")
        (staging / "new.txt").write_text("new")
    assert sorted(p.name for p in (tmp_path / "step-1").iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["step-1"]


def test_an_exception_removes_the_staging_and_keeps_the_previous_target(tmp_path: Path) -> None:
    (tmp_path / "step-1").mkdir()
    (tmp_path / "step-1" / "old.txt").write_text("old")

    def crash_mid_write() -> None:
        with staged_dir(tmp_path, "step-1") as staging:
            (staging / "half.txt").write_text("half")
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError, match="crash"):
        crash_mid_write()
    assert (tmp_path / "step-1" / "old.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["step-1"]


def test_latest_round_trips_and_is_none_before_the_first_write(tmp_path: Path) -> None:
    assert read_latest(tmp_path) is None
    write_latest(tmp_path, "step-7")
    assert (tmp_path / LATEST).read_text() == "step-7\n"
    assert read_latest(tmp_path) == tmp_path / "step-7"
    assert not list(tmp_path.glob(".LATEST.*"))  # the temporary file was replaced, not left


def test_prune_keeps_the_newest_by_number_and_removes_crash_staging(tmp_path: Path) -> None:
    for step in (2, 10, 9, 1):
        (tmp_path / f"step-{step}").mkdir()
    (tmp_path / "step-x").mkdir()  # not a step directory: never touched
    (tmp_path / ".step-11.partial").mkdir()  # a crashed write
    (tmp_path / ".step-12.abcd").mkdir()
    prune_steps(tmp_path, keep=2, current="step-10")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-10", "step-9", "step-x"]


def test_prune_never_removes_the_current_directory(tmp_path: Path) -> None:
    for step in (1, 5, 6):
        (tmp_path / f"step-{step}").mkdir()
    prune_steps(tmp_path, keep=1, current="step-1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-1", "step-6"]


def test_write_text_atomic_replaces_the_file_and_leaves_no_staging(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("old")
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_write_text_atomic_keeps_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_text_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]
