"""`_runner`: which task commands get the isolated pytest run, and with which arguments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import RepoSource, TaskSpec, UnsupportedTestCommandError
from swe_sandbox._runner import (
    BOOT_SOURCE,
    graded_invocation,
    isolated_argv,
)


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
    found = graded_invocation(command)
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
        "pytest a.py || pytest b.py",
        "pytest -x a.py && pytest b.py",  # the calls differ in their options
        "A=1 pytest a.py && pytest b.py",  # ... or in their variables
        "pytest a.py | tee log",
    ],
)
def test_other_shapes_are_refused(command: str) -> None:
    with pytest.raises(UnsupportedTestCommandError):
        graded_invocation(command)


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("pytest -rA a.py && pytest -rA b.py", ("a.py", "b.py")),
        ("cd /work && python3 -m pytest -q t", ("t",)),
        ("pytest x.py; pytest y.py ; pytest x.py", ("x.py", "y.py")),
        ("pytest -p no:cacheprovider -k 'a or b' t/x.py", ("t/x.py",)),
    ],
)
def test_lists_of_agreeing_pytest_calls_are_one_isolated_run(
    command: str, paths: tuple[str, ...]
) -> None:
    assert graded_invocation(command).paths == paths


@given(st.lists(st.sampled_from(["a.py", "b.py", "t/c.py"]), min_size=1, max_size=4))
def test_a_list_merges_exactly_the_paths_of_its_calls(paths: list[str]) -> None:
    command = " && ".join(f"python3 -m pytest -q {p}" for p in paths)
    found = graded_invocation(command)
    assert found.paths == tuple(dict.fromkeys(paths))
    assert found.options == ("-q",)


def test_graded_files_replace_the_paths_and_the_repository_config_is_read() -> None:
    spec = task("python3 -m pytest -q tests", "tests/b.py::t[1]", "tests/a.py::C::t")
    argv = isolated_argv(graded_invocation(spec.test_command), spec)
    assert "-c" not in argv  # pytest finds the repository's (pristine) configuration itself
    assert "--rootdir=/work" in argv
    assert "--confcutdir=/work" in argv
    assert not any(a.startswith("--import-mode") for a in argv)  # the repository's mode
    assert argv[-3:] == ["-q", "tests/a.py", "tests/b.py"]


def test_a_task_declared_config_is_kept() -> None:
    spec = task("pytest -c ci/pytest.ini --import-mode=importlib t.py", "t.py::x")
    argv = isolated_argv(graded_invocation(spec.test_command), spec)
    assert argv.count("--import-mode=importlib") == 1
    assert argv[argv.index("-c") + 1] == "ci/pytest.ini"


def test_no_graded_tests_keeps_the_task_paths() -> None:
    spec = task("pytest test_six.py")
    assert isolated_argv(graded_invocation(spec.test_command), spec)[-1] == "test_six.py"


def test_boot_script_is_valid_python() -> None:
    compile(BOOT_SOURCE, "boot.py", "exec")
