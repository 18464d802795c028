"""`TaskSpec` validation and the SWE-bench / SWE-rebench / R2E-Gym row loaders."""

from __future__ import annotations

import json

import pytest

from swe_sandbox import (
    RepoKind,
    RepoSource,
    TaskSpec,
    TaskSpecError,
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)

TEST_PATCH = (
    "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
    "@@ -1 +1,2 @@\n def test_a(): pass\n+def test_b(): pass\n"
)
SWEBENCH_ROW = {
    "repo": "astropy/astropy",
    "instance_id": "astropy__astropy-12907",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": "diff --git a/a.py b/a.py\n",
    "test_patch": TEST_PATCH,
    "problem_statement": "separability matrix is wrong",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "version": "4.3",
    "FAIL_TO_PASS": json.dumps(["tests/test_x.py::test_b"]),
    "PASS_TO_PASS": json.dumps(["tests/test_x.py::test_a"]),
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
}


def test_swebench_row() -> None:
    task = task_from_swebench_row(SWEBENCH_ROW)
    assert task.instance_id == "astropy__astropy-12907"
    assert task.base_commit == SWEBENCH_ROW["base_commit"]
    assert task.fail_to_pass == ("tests/test_x.py::test_b",)
    assert task.pass_to_pass == ("tests/test_x.py::test_a",)
    assert task.graded_files == ("tests/test_x.py",)
    assert task.repo.kind is RepoKind.IMAGE
    assert task.repo.location == "sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
    assert task.repo.path_in_image == "/testbed"


def test_swerebench_row_takes_test_cmd_and_image() -> None:
    row = {
        **SWEBENCH_ROW,
        "FAIL_TO_PASS": ["tests/test_x.py::test_b"],
        "install_config": {"test_cmd": "pytest --no-header -rA", "python": "3.9"},
        "docker_image": "swerebench/sweb.eval.x86_64.astropy_1776_astropy-12907",
    }
    task = task_from_swerebench_row(row)
    assert task.test_command == "pytest --no-header -rA"
    assert task.repo.location == row["docker_image"]
    assert task.fail_to_pass == ("tests/test_x.py::test_b",)


def test_r2egym_row() -> None:
    row = {
        "repo_name": "aiohttp",
        "docker_image": "namanjain12/aiohttp_final:abc",
        "commit_hash": "f0d74880deec8fcd982bce639c93c5e130d41198",
        "problem_statement": "bug",
        "expected_output_json": json.dumps(
            {"test_a": "PASSED", "test_b": "FAILED", "test_c": "PASSED"}
        ),
    }
    task = task_from_r2egym_row(row)
    assert task.instance_id == "aiohttp@f0d74880deec"
    assert task.pass_to_pass == ("test_a", "test_c")
    assert task.repo.location == "namanjain12/aiohttp_final:abc"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({k: v for k, v in SWEBENCH_ROW.items() if k != "base_commit"}, "lacks fields"),
        ({**SWEBENCH_ROW, "FAIL_TO_PASS": "[not json"}, "not a JSON list"),
        ({**SWEBENCH_ROW, "PASS_TO_PASS": json.dumps([1, 2])}, "list of strings"),
        ({**SWEBENCH_ROW, "base_commit": "not-a-sha"}, "not a hex commit"),
        ({**SWEBENCH_ROW, "instance_id": "../evil"}, "instance_id"),
    ],
)
def test_bad_rows_raise_typed_errors(row: dict[str, object], message: str) -> None:
    with pytest.raises(TaskSpecError, match=message):
        task_from_swebench_row(row)


def test_graded_paths_must_stay_inside_the_repository() -> None:
    with pytest.raises(TaskSpecError, match="relative path"):
        TaskSpec(instance_id="x", repo=RepoSource.directory("/tmp"), graded_files=("../x.py",))
    with pytest.raises(TaskSpecError, match="test_command"):
        TaskSpec(instance_id="x", repo=RepoSource.directory("/tmp"), test_command=" ")


def test_withheld_paths_join_graded_and_runner_files() -> None:
    task = TaskSpec(
        instance_id="x",
        repo=RepoSource.directory("/tmp"),
        test_patch=TEST_PATCH,
        runner_files={"run_tests.sh": "pytest\n"},
    )
    assert task.withheld_paths == ("tests/test_x.py", "run_tests.sh")
