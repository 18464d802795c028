"""The ``swe-sandbox`` command line (namespace backend; the Docker image commands are in
`test_docker_image.py`)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swe_sandbox import BackendUnavailableError, NamespaceBackend, TaskSpec
from swe_sandbox._cli import build_parser, main, task_from_json, task_to_json


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
    assert code == 2  # the task names a repository that is not there: the input's fault
    assert error["error"] == "RepoNotFoundError"
    assert capsys.readouterr().err == ""  # run_cli consumed the stderr line with stdout


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


@pytest.mark.parametrize(
    "argv",
    [
        ["image", "build-base", "--mirror", "http://mirror.example/debian", "--suite", "trixie"],
        ["--mirror", "http://mirror.example/debian", "--suite", "trixie", "image", "build-base"],
        [
            "--mirror",
            "http://other.example/",
            "image",
            "build-base",
            "--mirror",
            "http://mirror.example/debian",
            "--suite",
            "trixie",
        ],
    ],
    ids=["after", "before", "after-overrides-before"],
)
def test_mirror_and_suite_are_accepted_before_or_after_the_sub_command(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.mirror, args.suite) == ("http://mirror.example/debian", "trixie")


def test_defaults_survive_sub_commands_that_do_not_repeat_them() -> None:
    args = build_parser().parse_args(["janitor"])
    assert (args.mirror, args.suite) == (None, "bookworm")


def test_build_base_as_the_readme_writes_it(
    rootfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The mirror is not part of the recipe hash, so the cached rootfs answers without a download.
    code, built = run_cli(
        capsys, "image", "build-base", "--mirror", "http://deb.debian.org/debian", "--no-docker"
    )
    assert code == 0
    assert built["rootfs"] == str(rootfs)


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return str(tmp / name)


def _good_spec(tmp: Path, **changes: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "instance_id": "toy-1",
        "repo": {"kind": "directory", "location": str(tmp)},
        "test_command": "python -m pytest",
    }
    return {**spec, **changes}


#: (id, argv builder, expected exit code, what the one-line message must name)
BAD_INPUTS = [
    ("missing file", lambda t: ["grade", str(t / "nope.json")], 2, "nope.json"),
    ("not JSON", lambda t: ["grade", _write(t, "a.json", "not json")], 2, "not JSON"),
    (
        "partial file",
        lambda t: ["grade", _write(t, "p.json", '{"instance_id": "x", "re')],
        2,
        "not JSON",
    ),
    ("JSON list", lambda t: ["grade", _write(t, "l.json", "[1, 2]")], 2, "JSON object"),
    (
        "missing field",
        lambda t: [
            "grade",
            _write(t, "m.json", json.dumps({"repo": {"kind": "directory", "location": "."}})),
        ],
        2,
        "instance_id",
    ),
    (
        "unknown field",
        lambda t: ["grade", _write(t, "u.json", json.dumps(_good_spec(t, timeout=3)))],
        2,
        "timeout",
    ),
    (
        "invalid number",
        lambda t: [
            "grade",
            _write(
                t,
                "n.json",
                json.dumps(
                    _good_spec(
                        t, repo={"kind": "tarball", "location": "a.tgz", "strip_components": -1}
                    )
                ),
            ),
        ],
        2,
        "strip_components",
    ),
    (
        "mistyped list",
        lambda t: ["grade", _write(t, "f.json", json.dumps(_good_spec(t, fail_to_pass="t::a")))],
        2,
        "fail_to_pass",
    ),
    (
        "bad repo kind",
        lambda t: [
            "image",
            "build",
            _write(t, "k.json", json.dumps(_good_spec(t, repo={"kind": "svn", "location": "."}))),
        ],
        2,
        "repo.kind",
    ),
    (
        "malformed dataset row",
        lambda t: [
            "grade",
            "--format",
            "swebench",
            _write(t, "r.json", json.dumps({"instance_id": "x"})),
        ],
        2,
        "lacks fields",
    ),
    (
        "missing patch file",
        lambda t: [
            "grade",
            _write(t, "g.json", json.dumps(_good_spec(t))),
            "--patch",
            str(t / "none.diff"),
        ],
        2,
        "none.diff",
    ),
    ("missing spec", lambda t: ["image", "build-env", str(t / "nope.json")], 2, "nope.json"),
    (
        "bad spec",
        lambda t: ["image", "build-env", _write(t, "s.json", json.dumps({"name": "x", "y": 1}))],
        2,
        "unknown fields",
    ),
    (
        "unwritable cache",
        lambda t: ["image", "build-base", "--no-docker", "--suite", "sid"],
        1,
        "/proc/",
    ),
    (
        "bad mirror URL",
        lambda t: ["image", "build-base", "--mirror", "deb.debian.org"],
        2,
        "--mirror",
    ),
    ("bad suite", lambda t: ["janitor", "--suite", "bad suite"], 2, "--suite"),
    ("unknown backend", lambda t: ["janitor", "--backend", "podman"], 2, "--backend"),
    ("no sub-command", lambda t: [], 2, "required"),
]


@pytest.mark.parametrize(
    ("argv", "code", "names"), [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input_is_one_line_and_a_non_zero_exit(
    tmp_path: Path, argv: object, code: int, names: str
) -> None:
    assert callable(argv)
    env = {**os.environ, "SWE_SANDBOX_CACHE": "/proc/swe-sandbox-cache"}  # never writable
    done = subprocess.run(
        [sys.executable, "-m", "swe_sandbox._cli", *argv(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # one `PROG: error:` line
    assert re.match(r"swe-sandbox( [a-z-]+)*: error: ", done.stderr), done.stderr
    assert names in done.stderr
    if done.stdout:  # a typed error: also exactly one JSON line on stdout, for tools
        lines = done.stdout.splitlines()
        assert len(lines) == 1, done.stdout
        error = json.loads(lines[0])
        assert names in error["message"], error
        assert error["error"].endswith("Error")
        assert done.stderr == f"swe-sandbox: error: {error['message']}\n"
    else:  # an argparse usage error names the option and where to look
        assert code == 2
        assert done.stderr.rstrip().endswith("--help)")


def test_an_interrupt_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ctrl-C lands wherever the command is; `Sandbox`'s context manager has torn down by the time
    # it reaches `main`, which only has to turn it into one line and the conventional status.
    def interrupted(args: object) -> dict[str, object]:
        raise KeyboardInterrupt

    monkeypatch.setattr("swe_sandbox._cli._run", interrupted)
    code, error = run_cli(capsys, "janitor")
    assert code == 130
    assert error["error"] == "Interrupted"


COMMAND_PATHS = [
    [], ["image"], ["image", "build-base"], ["image", "build-env", "s.json"],
    ["image", "build", "t.json"], ["grade", "t.json"], ["janitor"],
]  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    path=st.sampled_from(COMMAND_PATHS),
    flag=st.text(alphabet="abcxyz-_=0", min_size=1, max_size=8),
    where=st.integers(min_value=0, max_value=4),
)
def test_a_bad_argv_never_exits_0_nor_shows_a_traceback(
    path: list[str], flag: str, where: int
) -> None:
    argv = [*path]
    argv.insert(min(where, len(argv)), f"--zz{flag}")  # no option of any command starts --zz
    with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(io.StringIO()) as err:
        main(argv)
    assert exited.value.code == 2
    assert "Traceback" not in err.getvalue()
    assert re.match(r"swe-sandbox( [a-z-]+)*: error: ", err.getvalue()), err.getvalue()


def test_an_infrastructure_failure_is_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The input was fine; the backend could not do the work (no daemon, no namespaces).
    def unavailable(args: object) -> dict[str, object]:
        raise BackendUnavailableError("docker daemon not reachable")

    monkeypatch.setattr("swe_sandbox._cli._run", unavailable)
    assert main(["janitor", "--backend", "docker"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": "BackendUnavailableError",
        "message": "docker daemon not reachable",
    }
    assert err == "swe-sandbox: error: docker daemon not reachable\n"
