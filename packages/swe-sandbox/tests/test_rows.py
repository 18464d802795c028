"""Dataset rows as tasks: published field names, both list encodings, local checkouts."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import (
    BaseCommitNotFoundError,
    EnvironmentBuildError,
    RepoKind,
    RepoNotFoundError,
    TaskSpecError,
    env_spec_from_row,
    find_checkout,
    prepare_repo,
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)
from swe_sandbox._taskfile import task_from_json

TEST_PATCH = (
    "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
    "@@ -1 +1,2 @@\n def test_a(): pass\n+def test_b(): pass\n"
)


def _row(**fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "repo": "octo/widgets",
        "instance_id": "octo__widgets-1",
        "base_commit": "0" * 40,
        "patch": "",
        "test_patch": TEST_PATCH,
        "problem_statement": "widgets break",
        "version": "1.0",
        "environment_setup_commit": "1" * 40,
        "FAIL_TO_PASS": ["tests/test_x.py::test_b"],
        "PASS_TO_PASS": ["tests/test_x.py::test_a"],
    }
    row.update(fields)
    return row


_node_id = st.from_regex(
    r"tests/test_[a-z]{1,8}\.py::test_[a-z0-9_]{1,12}(\[[a-z0-9-]{1,6}\])?", fullmatch=True
)


@given(fail=st.lists(_node_id, min_size=1, max_size=6), p2p=st.lists(_node_id, max_size=6))
def test_list_and_json_string_forms_give_the_same_task(fail: list[str], p2p: list[str]) -> None:
    as_lists = task_from_swebench_row(_row(FAIL_TO_PASS=fail, PASS_TO_PASS=p2p))
    as_strings = task_from_swebench_row(
        _row(FAIL_TO_PASS=json.dumps(fail), PASS_TO_PASS=json.dumps(p2p))
    )
    assert as_lists == as_strings
    assert as_lists.fail_to_pass == tuple(fail)
    assert as_lists.pass_to_pass == tuple(p2p)


@given(
    value=st.one_of(
        st.integers(),
        st.lists(st.integers(), min_size=1),
        st.text().filter(lambda t: t.strip() != "" and not t.strip().startswith("[")),
        st.dictionaries(st.text(), st.text(), min_size=1),
    )
)
def test_a_malformed_list_field_is_one_typed_error(value: object) -> None:
    with pytest.raises(TaskSpecError):
        task_from_swebench_row(_row(FAIL_TO_PASS=value))


_FIELDS = sorted(_row())


@given(
    overrides=st.dictionaries(st.sampled_from(_FIELDS), st.none() | st.text() | st.integers()),
    dropped=st.sets(st.sampled_from(_FIELDS)),
)
def test_arbitrary_rows_never_escape_the_typed_errors(
    overrides: dict[str, object], dropped: set[str]
) -> None:
    # a valid row with fields replaced or removed: some parse (the assertions run), the
    # rest must fail with the one typed error, never another exception
    row = {k: v for k, v in _row(**overrides).items() if k not in dropped}
    for fmt in ("swebench", "swerebench", "r2egym"):
        try:
            task = task_from_json(row, fmt)
        except TaskSpecError:
            continue
        assert task.instance_id
        if fmt == "swebench":
            assert task.instance_id == str(row["instance_id"])


def test_the_unchanged_row_parses_so_the_property_above_reaches_its_assertions() -> None:
    assert task_from_json(_row(), "swebench").instance_id == "octo__widgets-1"


_R2E = {"repo_name": "widgets", "docker_image": "r2e/widgets:1", "commit_hash": "a" * 40}


@pytest.mark.parametrize(
    ("build", "value", "message"),
    [
        (lambda v: task_from_swerebench_row(_row(install_config=v)), "{", "install_config: not JSON"),
        (lambda v: task_from_swerebench_row(_row(install_config=v)), "[1]", "install_config: expected an object, got list"),
        (lambda v: task_from_r2egym_row({**_R2E, "expected_output_json": v}), "{", "expected_output_json: not JSON"),
        (lambda v: task_from_r2egym_row({**_R2E, "expected_output_json": v}), ["t"], "expected_output_json: must map test names to outcomes, got list"),
    ],
)  # fmt: skip
def test_object_fields_take_an_object_or_its_json_and_name_the_field(
    build: Any, value: object, message: str
) -> None:
    with pytest.raises(TaskSpecError, match=re.escape(message)):
        build(value)


def test_object_fields_read_the_same_as_an_object_and_as_json() -> None:
    expected = {"tests/test_x.py::test_a": "PASSED", "tests/test_x.py::test_b": "FAILED"}
    as_object = task_from_r2egym_row({**_R2E, "expected_output_json": expected})
    as_json = task_from_r2egym_row({**_R2E, "expected_output_json": json.dumps(expected)})
    assert as_object == as_json
    assert as_object.pass_to_pass == ("tests/test_x.py::test_a",)


def test_non_pytest_ids_are_refused_per_row() -> None:
    with pytest.raises(TaskSpecError, match="not a pytest node id"):
        task_from_swebench_row(_row(FAIL_TO_PASS=["test_add (calc.tests.AddTests)"]))
    with pytest.raises(TaskSpecError, match="FAIL_TO_PASS is empty"):
        task_from_swebench_row(_row(FAIL_TO_PASS="[]"))


def test_swerebench_takes_its_test_command_and_checks_the_log_parser() -> None:
    config = {
        "test_cmd": ["pytest -rA t/a.py", "pytest -rA t/b.py"],
        "log_parser": "parse_log_pytest",
    }
    task = task_from_swerebench_row(_row(install_config=json.dumps(config)))
    assert task.test_command == "pytest -rA t/a.py && pytest -rA t/b.py"
    with pytest.raises(TaskSpecError, match="not a pytest call"):  # the grader runs only pytest
        task_from_swerebench_row(_row(install_config={"test_cmd": ["pip list", "pytest -rA"]}))
    with pytest.raises(TaskSpecError, match="log_parser 'parse_log_jest'"):
        task_from_swerebench_row(_row(install_config={"log_parser": "parse_log_jest"}))
    with pytest.raises(TaskSpecError, match="install_config"):
        task_from_swerebench_row(_row(install_config="[1, 2]"))


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkouts(tmp_path: Path) -> tuple[Path, str]:
    """A folder of checkouts holding ``octo__widgets`` with one commit; returns (folder, sha)."""
    repo = tmp_path / "repos" / "octo__widgets"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("def test_a(): pass\n")
    (repo / "widgets.py").write_text("X = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return tmp_path / "repos", _git(repo, "rev-parse", "HEAD")


def test_repo_dir_finds_the_checkout_by_any_naming(checkouts: tuple[Path, str]) -> None:
    folder, _ = checkouts
    checkout = folder / "octo__widgets"
    assert find_checkout(folder, "octo/widgets") == checkout
    assert find_checkout(checkout, "anything/else") == checkout  # DIR is the checkout itself
    (folder / "octo").mkdir()
    (folder / "octo__widgets").rename(folder / "octo" / "widgets")
    assert find_checkout(folder, "octo/widgets") == folder / "octo" / "widgets"
    with pytest.raises(RepoNotFoundError, match="no git checkout of 'octo/gadgets'"):
        find_checkout(folder, "octo/gadgets")


def test_rows_on_a_checkout_prepare_and_a_missing_base_commit_is_its_own_error(
    checkouts: tuple[Path, str],
) -> None:
    folder, sha = checkouts
    good = task_from_swebench_row(_row(base_commit=sha), repo_dir=folder)
    assert good.repo.kind is RepoKind.DIRECTORY
    assert good.repo.location == str(folder / "octo__widgets")
    prepared = prepare_repo(good)
    assert prepared.base_commit == sha
    assert b"def test_b" in (prepared.restore_files["tests/test_x.py"] or b"")
    bad = task_from_swebench_row(
        _row(instance_id="octo__widgets-2", base_commit="ab" * 20), repo_dir=folder
    )
    with pytest.raises(BaseCommitNotFoundError, match="octo__widgets-2: base commit abab"):
        prepare_repo(bad)
    # The rebench and R2E-Gym importers take the same local checkouts.
    rebench = task_from_swerebench_row(
        _row(base_commit=sha, docker_image="nebius/x:1"), repo_dir=folder
    )
    assert rebench.repo.kind is RepoKind.DIRECTORY
    r2e = task_from_r2egym_row(
        {"repo_name": "widgets", "docker_image": "r2e/widgets:1", "commit_hash": sha},
        repo_dir=folder / "octo__widgets",
    )
    assert r2e.repo.location == str(folder / "octo__widgets")


def test_swerebench_install_config_is_an_environment_recipe(checkouts: tuple[Path, str]) -> None:
    folder, sha = checkouts
    checkout = folder / "octo__widgets"
    (checkout / "requirements-test.txt").write_text(
        "# pinned\nattrs==23.2.0\n\npluggy==1.5.0  # x\n"
    )
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "reqs")
    setup = _git(checkout, "rev-parse", "HEAD")
    config = {
        "python": "3.11",
        "pip_packages": ["six==1.16.0"],
        "reqs_path": ["requirements-test.txt"],
    }
    row = _row(base_commit=sha, environment_setup_commit=setup, install_config=config)
    spec = env_spec_from_row(row, checkout)
    assert spec is not None
    assert spec.requirements == ("six==1.16.0", "attrs==23.2.0", "pluggy==1.5.0")
    assert (spec.name, spec.python, spec.repo) == ("octo-widgets-1.0", "3.11", None)
    assert env_spec_from_row(_row(), checkout) is None  # no install_config: no recipe
    with pytest.raises(EnvironmentBuildError, match="not pinned"):
        env_spec_from_row(_row(install_config={"pip_packages": "six pytest==8.0.0"}), checkout)
    with pytest.raises(TaskSpecError, match=r"reqs_path 'requirements-test\.txt' is not in"):
        env_spec_from_row(
            _row(
                environment_setup_commit=sha, install_config={"reqs_path": "requirements-test.txt"}
            ),
            checkout,
        )


def test_the_cli_grades_a_swebench_row_from_a_checkout(
    tmp_path: Path, namespace_backend: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from swe_sandbox._cli import main

    repo = tmp_path / "repos" / "octo" / "calc"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    row = _row(
        repo="octo/calc",
        instance_id="octo__calc-1",
        base_commit=_git(repo, "rev-parse", "HEAD"),
        patch="--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n",
        test_patch="--- /dev/null\n+++ b/tests/test_calc.py\n@@ -0,0 +1,4 @@\n"
        "+from calc import add\n+\n+def test_add():\n+    assert add(2, 3) == 5\n",
        FAIL_TO_PASS=json.dumps(["tests/test_calc.py::test_add"]),
        PASS_TO_PASS="[]",
    )
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    argv = ["grade", str(path), "--format", "swebench", "--repo-dir", str(tmp_path / "repos")]
    rewards = []
    for patch in ("gold", "none"):
        assert main([*argv, "--patch", patch]) == 0
        rewards.append(json.loads(capsys.readouterr().out)["reward"])
    assert rewards == [1, 0]
    # a usage error: the --repo-dir named does not hold the row's repository
    assert main([*argv[:-1], str(tmp_path / "elsewhere")]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "RepoNotFoundError"
