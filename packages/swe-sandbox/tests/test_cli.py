"""The ``swe-sandbox`` command line (namespace backend; the Docker image commands are in
`test_docker_image.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swe_sandbox import NamespaceBackend, TaskSpec
from swe_sandbox._cli import main, task_from_json, task_to_json


def task_file(task: TaskSpec, path: Path, **changes: object) -> Path:
    path.write_text(json.dumps({**task_to_json(task), **changes}))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out = capsys.readouterr().out.strip().splitlines()[-1]
    parsed: dict[str, object] = json.loads(out)
    return code, parsed


def test_round_trip_of_the_task_file(toy_task: TaskSpec, tmp_path: Path) -> None:
    loaded = task_from_json(json.loads(task_file(toy_task, tmp_path / "t.json").read_text()))
    assert loaded == toy_task


def test_grade_gold_and_empty(
    namespace_backend: NamespaceBackend,
    toy_task: TaskSpec,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = task_file(toy_task, tmp_path / "t.json")
    code, gold = run_cli(capsys, "grade", str(path), "--patch", "gold")
    assert code == 0
    assert gold["reward"] == 1
    code, empty = run_cli(capsys, "grade", str(path))
    assert empty["reward"] == 0
    assert empty["tests"] == {
        "tests/test_add.py::test_add_positive": "failed",
        "tests/test_add.py::test_add_negative": "failed",
        "tests/test_core.py::test_sub": "passed",
    }


def test_bad_task_gives_the_typed_error(
    namespace_backend: NamespaceBackend,
    toy_task: TaskSpec,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = task_file(
        toy_task,
        tmp_path / "t.json",
        repo={"kind": "directory", "location": str(tmp_path / "missing")},
    )
    code, error = run_cli(capsys, "grade", str(path))
    assert code == 1
    assert error["error"] == "RepoNotFoundError"


def test_build_base_rootfs_only_and_janitor(
    rootfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, built = run_cli(capsys, "image", "build-base", "--no-docker")
    assert code == 0
    assert built["rootfs"] == str(rootfs)
    assert built["image"] is None
    code, reaped = run_cli(capsys, "janitor")
    assert code == 0
    assert isinstance(reaped["reaped"], int)


def test_help_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "swe_sandbox._cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "build-base" in done.stdout
