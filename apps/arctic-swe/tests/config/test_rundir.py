"""Tests for ``arctic_swe.config._rundir``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arctic_swe.config import (
    RunConfig,
    RunDirError,
    apply_overrides,
    load_run_config,
    prepare_run_dir,
)


def test_fresh_run_writes_its_config_and_resume_reads_it(tmp_path: Path) -> None:
    config = apply_overrides(RunConfig(), ["run.updates=3"])
    run = prepare_run_dir(tmp_path / "r", config, resume=False)
    assert run.plots.is_dir()
    assert run.checkpoints.is_dir()
    assert load_run_config(prepare_run_dir(run.root, RunConfig(), resume=True)) == config


def test_fresh_run_refuses_an_existing_run(tmp_path: Path) -> None:
    prepare_run_dir(tmp_path, RunConfig(), resume=False)
    with pytest.raises(RunDirError, match="already holds a run"):
        prepare_run_dir(tmp_path, RunConfig(), resume=False)


def test_resume_needs_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="nothing to resume"):
        prepare_run_dir(tmp_path, RunConfig(), resume=True)


def test_a_file_is_not_a_run_directory(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(RunDirError):
        prepare_run_dir(target, RunConfig(), resume=False)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_unwritable_directory_is_refused_before_any_work(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(RunDirError, match="not writable"):
            prepare_run_dir(locked, RunConfig(), resume=False)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_directory_under_a_file_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(RunDirError, match="cannot create"):
        prepare_run_dir(blocker / "run", RunConfig(), resume=False)


def test_read_only_filesystem_is_refused() -> None:
    with pytest.raises(RunDirError):
        prepare_run_dir("/proc/arctic-swe-run", RunConfig(), resume=False)


def test_existing_directory_that_even_root_cannot_write_is_refused() -> None:
    # /proc/self exists and is a directory, but no process (root included) can create files
    # there: the writability probe, not the permission bits, must catch it.
    with pytest.raises(RunDirError, match="not writable"):
        prepare_run_dir("/proc/self", RunConfig(), resume=False)
