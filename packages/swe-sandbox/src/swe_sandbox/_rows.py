"""Public dataset rows as tasks: SWE-bench (Verified/Lite), SWE-rebench and R2E-Gym.

The published field names are read as they are (``instance_id, repo, base_commit, patch,
test_patch, problem_statement, FAIL_TO_PASS, PASS_TO_PASS, version,
environment_setup_commit``; SWE-rebench's ``install_config`` and ``docker_image``; R2E-Gym's
``repo_name, docker_image, commit_hash, expected_output_json``). The list fields may be lists
or, as SWE-bench publishes them, JSON strings holding lists.

Where a task's repository comes from is the caller's choice: by default the dataset's own
per-instance image (present locally: nothing is pulled), or ``repo_dir``, a local checkout (or
a folder of checkouts, one per repository) in which the base commit must exist. Every problem
with a row is one `TaskSpecError` (or `RepoNotFoundError` for a checkout that is not there)
naming the row, so a batch importer can record it and go on with the next row.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_sandbox._env_image import EnvSpec
from swe_sandbox._errors import RepoNotFoundError, TaskSpecError, UnsupportedTestCommandError
from swe_sandbox._runner import graded_invocation
from swe_sandbox._task import DEFAULT_TEST_COMMAND, RepoSource, TaskSpec, _str_tuple

#: SWE-rebench ``install_config.log_parser`` values whose runner is pytest. Their results are
#: taken from the per-test report plugin, not from parsing the log: a log is text the code
#: under test can print (Arctic-SWE §5, evaluation-hacking prevention).
PYTEST_LOG_PARSERS = frozenset(
    {"parse_log_pytest", "parse_log_pytest_v2", "parse_log_pytest_options", "pytest"}
)


def _required(row: Mapping[str, Any], *names: str) -> list[Any]:
    missing = [n for n in names if n not in row or row[n] is None]
    if missing:
        raise TaskSpecError(f"row {row.get('instance_id', '?')!r} lacks fields {missing}")
    return [row[n] for n in names]


def swebench_image_name(instance_id: str) -> str:
    """The image tag the SWE-bench harness gives an instance (``__`` becomes ``_1776_``)."""
    return f"sweb.eval.x86_64.{instance_id.replace('__', '_1776_').lower()}:latest"


def find_checkout(repo_dir: str | Path, repo_name: str | None) -> Path:
    """The local checkout of ``repo_name`` (``owner/name``) under ``repo_dir``.

    ``repo_dir`` is either the checkout itself (it holds ``.git``) or a folder of checkouts,
    each named ``owner__name`` (the SWE-bench instance-id convention), ``owner/name`` or
    ``name``. Raises `RepoNotFoundError` listing the places looked at.
    """
    root = Path(repo_dir)
    if (root / ".git").exists():
        return root
    if not root.is_dir():
        raise RepoNotFoundError(f"--repo-dir {root} is not a directory")
    owner, _, name = (repo_name or "").rpartition("/")
    candidates = [root / f"{owner}__{name}", root / owner / name] if owner else []
    candidates += [root / name] if name else []
    for candidate in candidates:
        if (candidate / ".git").exists():
            return candidate
    looked = ", ".join(str(c) for c in candidates) or "(the row names no repository)"
    raise RepoNotFoundError(f"no git checkout of {repo_name!r} in {root} (looked at {looked})")


def _local_repo(
    row: Mapping[str, Any], repo: RepoSource | None, repo_dir: str | Path | None, field: str
) -> RepoSource | None:
    if repo is not None or repo_dir is None:
        return repo
    return RepoSource.directory(find_checkout(repo_dir, _opt_str(row.get(field))))


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _pytest_ids(ids: tuple[str, ...], field: str, instance_id: str) -> tuple[str, ...]:
    """Test ids must be pytest node ids (``path::name``): the report plugin keys on them."""
    for test_id in ids:
        if "::" not in test_id:
            raise TaskSpecError(
                f"{instance_id}: {field} id {test_id!r} is not a pytest node id (path::name); "
                "rows graded by another runner (django's runtests.py, sympy's bin/test) are "
                "not supported"
            )
    return ids


def task_from_swebench_row(
    row: Mapping[str, Any],
    *,
    repo: RepoSource | None = None,
    test_command: str | None = None,
    repo_dir: str | Path | None = None,
) -> TaskSpec:
    """Build a task from a SWE-bench (or SWE-bench Verified/Lite/Pro) row.

    Fields used: ``instance_id, base_commit, patch, test_patch, problem_statement,
    FAIL_TO_PASS, PASS_TO_PASS`` (the two lists may be JSON strings, as published) and
    ``repo`` (``owner/name``, to find a checkout under `repo_dir`). The repository is `repo`
    if given, else the checkout under `repo_dir`, else the harness's per-instance image with
    the tree at ``/testbed``.
    """
    instance_id, base_commit, patch, test_patch = _required(
        row, "instance_id", "base_commit", "patch", "test_patch"
    )
    for name, value in (("patch", patch), ("test_patch", test_patch)):
        if not isinstance(value, str):
            raise TaskSpecError(f"{instance_id}: {name} must be a string (a unified diff)")
    fail = _str_tuple(row.get("FAIL_TO_PASS"), "FAIL_TO_PASS")
    passing = _str_tuple(row.get("PASS_TO_PASS"), "PASS_TO_PASS")
    if not fail:
        raise TaskSpecError(f"{instance_id}: FAIL_TO_PASS is empty (nothing to grade a fix by)")
    source = _local_repo(row, repo, repo_dir, "repo")
    return TaskSpec(
        instance_id=str(instance_id),
        repo=source or RepoSource.image(swebench_image_name(str(instance_id))),
        base_commit=str(base_commit),
        problem_statement=str(row.get("problem_statement") or ""),
        gold_patch=patch,
        test_patch=test_patch,
        fail_to_pass=_pytest_ids(fail, "FAIL_TO_PASS", str(instance_id)),
        pass_to_pass=_pytest_ids(passing, "PASS_TO_PASS", str(instance_id)),
        test_command=test_command or DEFAULT_TEST_COMMAND,
    )


def install_config(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """SWE-rebench's ``install_config`` (a dict or a JSON string; ``{}`` when absent)."""
    return _json_object(row, "install_config", "expected an object")


def _json_object(row: Mapping[str, Any], field: str, shape: str) -> Mapping[str, Any]:
    """``row[field]`` as a mapping: published both as an object and as a JSON string (``{}``
    when absent); anything else is a :class:`TaskSpecError` naming the field and ``shape``."""
    value: Any = row.get(field) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise TaskSpecError(f"{field}: not JSON: {exc}") from exc
    if not isinstance(value, Mapping):
        raise TaskSpecError(f"{field}: {shape}, got {type(value).__name__}")
    return value


def task_from_swerebench_row(
    row: Mapping[str, Any],
    *,
    repo: RepoSource | None = None,
    repo_dir: str | Path | None = None,
) -> TaskSpec:
    """Build a task from a SWE-rebench row.

    Same fields as SWE-bench plus ``install_config`` (a dict or JSON string): its ``test_cmd``
    (a string or a list of commands) becomes the per-repository test command — pytest calls
    that agree on their options, else `TaskSpecError` (the grader runs nothing else) — and its
    ``log_parser`` must name a pytest parser (results come from the report plugin); and, when
    present and no `repo` / `repo_dir` is given, ``docker_image`` / ``image_name``.
    """
    config = install_config(row)
    test_cmd = config.get("test_cmd")
    if isinstance(test_cmd, list):
        test_cmd = " && ".join(str(part) for part in test_cmd)
    if test_cmd is not None and not isinstance(test_cmd, str):
        raise TaskSpecError("install_config.test_cmd: expected a string or a list of strings")
    parser = config.get("log_parser")
    if parser is not None and str(parser) not in PYTEST_LOG_PARSERS:
        raise TaskSpecError(
            f"{row.get('instance_id', '?')}: install_config.log_parser {parser!r} is not a "
            f"pytest parser ({sorted(PYTEST_LOG_PARSERS)}); other runners are not supported"
        )
    if test_cmd and test_cmd.strip():  # a blank one is the missing-program case, later
        try:
            graded_invocation(test_cmd)
        except UnsupportedTestCommandError as exc:
            raise TaskSpecError(
                f"{row.get('instance_id', '?')}: install_config.test_cmd: {exc}"
            ) from exc
    image = row.get("docker_image") or row.get("image_name")
    if repo is None and repo_dir is None and image:
        repo = RepoSource.image(str(image))
    return task_from_swebench_row(row, repo=repo, test_command=test_cmd or None, repo_dir=repo_dir)


def task_from_r2egym_row(
    row: Mapping[str, Any],
    *,
    repo: RepoSource | None = None,
    repo_dir: str | Path | None = None,
) -> TaskSpec:
    """Build a task from an R2E-Gym (R2E-Gym-Lite / -Subset) row.

    Fields used: ``repo_name, docker_image, commit_hash, problem_statement,
    expected_output_json`` (test name -> ``"PASSED"``/``"FAILED"``...). R2E-Gym publishes only
    the post-fix pattern, so tests expected to pass become `pass_to_pass` (an unfixed tree
    still fails some of them, so the contract holds); the image's tree is the buggy one, hence
    no base commit is checked out. With `repo_dir`, the checkout of ``repo_name`` is used as a
    plain tree at its HEAD (the caller checks out the buggy state).
    """
    repo_name, docker_image, commit_hash = _required(
        row, "repo_name", "docker_image", "commit_hash"
    )
    expected = _json_object(row, "expected_output_json", "must map test names to outcomes")
    passing = tuple(sorted(str(k) for k, v in expected.items() if str(v).upper() == "PASSED"))
    safe_name = re.sub(r"[^A-Za-z0-9._-]", "-", str(repo_name))
    source = _local_repo(row, repo, repo_dir, "repo_name")
    return TaskSpec(
        instance_id=f"{safe_name}@{str(commit_hash)[:12]}",
        repo=source or RepoSource.image(str(docker_image)),
        base_commit=None,
        problem_statement=str(row.get("problem_statement") or ""),
        gold_patch=str(row.get("patch") or ""),
        test_patch=str(row.get("test_patch") or ""),
        pass_to_pass=passing,
    )


def _requirement_lines(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def _file_at(checkout: Path, commit: str, path: str) -> str:
    done = subprocess.run(
        ["git", "show", f"{commit}:{path}"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise TaskSpecError(f"install_config.reqs_path {path!r} is not in {checkout} at {commit}")
    return done.stdout


def env_spec_from_row(row: Mapping[str, Any], checkout: str | Path | None = None) -> EnvSpec | None:
    """The environment recipe a SWE-rebench row carries, or ``None`` when it carries none.

    From ``install_config``: ``python`` (checked against the base image's), ``pip_packages``
    (a list, or one whitespace-separated string) and the requirement files ``reqs_path``, read
    from `checkout` at ``environment_setup_commit`` (else ``base_commit``) — the SWE-bench
    harness's env layer, keyed by repository and version. Every requirement must be pinned
    (``name==version``): the image is built offline from a wheelhouse. As in the harness, the
    env layer holds no repository (the instance layer or the sandbox brings the task's tree),
    so the rows of one repository and version share one image. ``pre_install`` / ``install``
    commands are not run (the project itself is not installed: the agent's tree is the one
    under test).

    Raises:
        TaskSpecError: a requirement file is missing at that commit.
        EnvironmentBuildError: (step ``spec``) an unpinned requirement or a bad name.
    """
    config = install_config(row)
    if not config:
        return None
    packages: Any = config.get("pip_packages") or []
    if isinstance(packages, str):
        packages = packages.split()
    requirements = [str(p) for p in packages]
    commit = _opt_str(row.get("environment_setup_commit") or row.get("base_commit"))
    reqs: Any = config.get("reqs_path") or []
    for path in [reqs] if isinstance(reqs, str) else reqs:
        if checkout is None or commit is None:
            raise TaskSpecError(f"install_config.reqs_path {path!r} needs a local checkout")
        requirements += _requirement_lines(_file_at(Path(checkout), commit, str(path)))
    raw_name = f"{row.get('repo') or row.get('instance_id', 'env')}-{row.get('version') or 'env'}"
    name = re.sub(r"[^a-z0-9._-]+", "-", raw_name.lower()).strip("-._")[:64] or "env"
    python = config.get("python")
    return EnvSpec(
        name=name,
        requirements=tuple(dict.fromkeys(requirements)),
        python=None if python is None else str(python),
    )
