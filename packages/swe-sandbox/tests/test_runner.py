"""`_runner`: which task commands get the isolated pytest run, and with which arguments."""

from __future__ import annotations

import pytest

from swe_sandbox import RepoSource, TaskSpec
from swe_sandbox._runner import BOOT_SOURCE, isolated_argv, parse_pytest_command


def task(command: str, *tests: str) -> TaskSpec:
    return TaskSpec(
        instance_id="t",
        repo=RepoSource.directory("/tmp"),
        test_command=command,
        fail_to_pass=tests,
    )


@pytest.mark.parametrize(
    ("command", "python", "options", "paths", "env"),
    [
        ("python3 -m pytest -p no:cacheprovider tests", "python3", ("-p", "no:cacheprovider"), ("tests",), {}),
        ("pytest --no-header -rA", "python3", ("--no-header", "-rA"), (), {}),
        ("LC_ALL=C python -m pytest -k 'a or b' t.py", "python", ("-k", "a or b"), ("t.py",), {"LC_ALL": "C"}),
        ("/usr/bin/python3 -m pytest --tb=short x y", "/usr/bin/python3", ("--tb=short",), ("x", "y"), {}),
    ],
)  # fmt: skip
def test_pytest_commands_are_recognised(
    command: str, python: str, options: tuple[str, ...], paths: tuple[str, ...], env: dict[str, str]
) -> None:
    found = parse_pytest_command(command)
    assert found is not None
    assert (found.python, found.options, found.paths, found.env) == (python, options, paths, env)


@pytest.mark.parametrize(
    "command",
    [
        "bash run_tests.sh",
        "python3 -m pytest tests && echo done",
        "cd sub; pytest",
        "tox -e py311",
        "python3 setup.py test",
        "pytest 'unclosed",
    ],
)
def test_other_shapes_fall_back_to_the_shell(command: str) -> None:
    assert parse_pytest_command(command) is None


def test_graded_files_replace_the_paths_and_grader_config_comes_first() -> None:
    spec = task("python3 -m pytest -q tests", "tests/b.py::t[1]", "tests/a.py::C::t")
    invocation = parse_pytest_command(spec.test_command)
    assert invocation is not None
    argv = isolated_argv(invocation, spec, "/grader/n")
    assert argv[:2] == ["-c", "/grader/n/pytest.ini"]
    assert "--rootdir=/work" in argv
    assert "--confcutdir=/work" in argv
    assert "--import-mode=append" in argv
    assert argv[-3:] == ["-q", "tests/a.py", "tests/b.py"]


def test_a_task_declared_config_is_kept() -> None:
    spec = task("pytest -c ci/pytest.ini --import-mode=importlib t.py", "t.py::x")
    invocation = parse_pytest_command(spec.test_command)
    assert invocation is not None
    argv = isolated_argv(invocation, spec, "/grader/n")
    assert "/grader/n/pytest.ini" not in argv
    assert argv.count("--import-mode=importlib") == 1
    assert "--import-mode=append" not in argv


def test_no_graded_tests_keeps_the_task_paths() -> None:
    spec = task("pytest test_six.py")
    invocation = parse_pytest_command(spec.test_command)
    assert invocation is not None
    assert isolated_argv(invocation, spec, "/g")[-1] == "test_six.py"


def test_boot_script_is_valid_python() -> None:
    compile(BOOT_SOURCE, "boot.py", "exec")
