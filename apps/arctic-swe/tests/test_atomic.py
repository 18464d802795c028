"""Tests for ``arctic_swe._atomic``: one file replaced whole, and the shared atomic
``step-N`` + ``LATEST`` protocol (published weights, checkpoints, loop state, deck)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe._atomic import (
    LATEST,
    atomic_file,
    atomic_write_text,
    prune_steps,
    read_latest,
    staged_dir,
    write_latest,
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


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write_text(target, "one")
    assert target.read_text() == "one"

    def crash_mid_write() -> None:
        with atomic_file(target) as staging:
            staging.write_text("half")
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError, match="crash"):
        crash_mid_write()
    assert target.read_text() == "one"
    atomic_write_text(target, "two", fsync=True)
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_directory_replacing_a_file_or_directory_leaves_nothing_aside(tmp_path: Path) -> None:
    (tmp_path / "step-1").write_text("a file where the directory goes")
    with staged_dir(tmp_path, "step-1") as staging:
        (staging / "x").write_text("x")
    assert (tmp_path / "step-1" / "x").read_text() == "x"
    with staged_dir(tmp_path, "step-1") as staging:
        (staging / "y").write_text("y")
    assert sorted(p.name for p in (tmp_path / "step-1").iterdir()) == ["y"]
    assert [p.name for p in tmp_path.iterdir()] == ["step-1"]  # the old one removed


def test_a_failed_write_keeps_the_old_file_and_leaves_no_staging(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("old")
    with pytest.raises(TypeError):
        atomic_write_text(target, 42, fsync=True)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]
