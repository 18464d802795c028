"""Task files: a `TaskSpec` (or a dataset row) as one JSON object, read with precise errors.

Whatever is wrong with a task file — missing, unreadable, not JSON, truncated, a missing or
unknown field, a value of the wrong type — is reported as one `TaskSpecError` naming the file and
the field, never as a bare ``KeyError`` or ``TypeError`` from deep inside the constructor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from swe_sandbox._errors import TaskSpecError
from swe_sandbox._rows import (
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)
from swe_sandbox._task import RepoKind, RepoSource, TaskSpec, _str_tuple

#: ``--format`` values: our own field names, or a row of one of the supported datasets.
FORMATS = ("spec", "swebench", "swerebench", "r2egym")

_REQUIRED = ("instance_id", "repo")
_STRING_FIELDS = ("instance_id", "problem_statement", "gold_patch", "test_patch", "test_command")
_LIST_FIELDS = (
    "fail_to_pass",
    "pass_to_pass",
    "graded_files",
    "setup_commands",
    "allowed_config_paths",
)
_REPO_FIELDS = {"kind", "location", "path_in_image", "strip_components"}


def task_to_json(task: TaskSpec) -> dict[str, Any]:
    """The ``spec`` JSON form of `task` (inverse of `task_from_json`)."""
    data = attrs.asdict(task, recurse=False)
    data["repo"] = {
        "kind": task.repo.kind.value,
        "location": task.repo.location,
        "path_in_image": task.repo.path_in_image,
        "strip_components": task.repo.strip_components,
    }
    for key, value in data.items():
        if isinstance(value, tuple):
            data[key] = list(value)
    data["runner_files"] = dict(task.runner_files)
    return data


def _repo_from_json(repo: Any) -> RepoSource:
    if not isinstance(repo, Mapping):
        raise TaskSpecError(f"repo: expected an object, got {type(repo).__name__}")
    if unknown := sorted(set(repo) - _REPO_FIELDS):
        raise TaskSpecError(f"repo: unknown fields {unknown}")
    if missing := [k for k in ("kind", "location") if k not in repo]:
        raise TaskSpecError(f"repo: missing fields {missing}")
    kinds = [k.value for k in RepoKind]
    if repo["kind"] not in kinds:
        raise TaskSpecError(f"repo.kind: {repo['kind']!r} is not one of {kinds}")
    for key in ("location", "path_in_image"):
        if not isinstance(repo.get(key, ""), str):
            raise TaskSpecError(f"repo.{key}: expected a string")
    strip = repo.get("strip_components", 0)
    if type(strip) is not int or strip < 0:
        raise TaskSpecError(f"repo.strip_components: {strip!r} is not a non-negative integer")
    return RepoSource(
        kind=RepoKind(repo["kind"]),
        location=repo["location"],
        path_in_image=repo.get("path_in_image", "/testbed"),
        strip_components=strip,
    )


def _spec_from_json(data: Mapping[str, Any]) -> TaskSpec:
    known = {field.name for field in attrs.fields(TaskSpec)}
    if unknown := sorted(set(data) - known):
        raise TaskSpecError(f"unknown fields {unknown}")
    if missing := [k for k in _REQUIRED if k not in data]:
        raise TaskSpecError(f"missing fields {missing}")
    fields = dict(data)
    fields["repo"] = _repo_from_json(fields["repo"])
    for key in _STRING_FIELDS:
        if key in fields and not isinstance(fields[key], str):
            raise TaskSpecError(f"{key}: expected a string, got {type(fields[key]).__name__}")
    if not isinstance(fields.get("base_commit"), str | None):
        raise TaskSpecError("base_commit: expected a string or null")
    for key in _LIST_FIELDS:
        if key in fields:
            if not isinstance(fields[key], list):
                raise TaskSpecError(f"{key}: expected a list of strings")
            fields[key] = _str_tuple(fields[key], key)
    runner = fields.get("runner_files", {})
    if not isinstance(runner, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in runner.items()
    ):
        raise TaskSpecError("runner_files: expected an object of path -> file content")
    return TaskSpec(**fields)


def task_from_json(
    data: Mapping[str, Any], fmt: str = "spec", *, repo_dir: str | Path | None = None
) -> TaskSpec:
    """A task from a JSON object: our own field names (``spec``) or a dataset row.

    `repo_dir` (dataset rows only) takes the repository from a local checkout instead of the
    dataset's image (see `swe_sandbox._rows.find_checkout`).

    Raises:
        TaskSpecError: a missing, unknown or mistyped field, or a value `TaskSpec` rejects.
        RepoNotFoundError: `repo_dir` holds no checkout of the row's repository.
    """
    if fmt not in FORMATS:
        raise TaskSpecError(f"format {fmt!r} is not one of {list(FORMATS)}")
    if not isinstance(data, Mapping):
        raise TaskSpecError(f"expected a JSON object, got {type(data).__name__}")
    if repo_dir is not None and fmt == "spec":
        raise TaskSpecError("--repo-dir applies to dataset rows (a spec names its own repo)")
    try:
        if fmt == "swebench":
            return task_from_swebench_row(data, repo_dir=repo_dir)
        if fmt == "swerebench":
            return task_from_swerebench_row(data, repo_dir=repo_dir)
        if fmt == "r2egym":
            return task_from_r2egym_row(data, repo_dir=repo_dir)
        return _spec_from_json(data)
    except TaskSpecError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        # A dataset row of the wrong shape fails inside its importer; say so in one line.
        raise TaskSpecError(f"malformed {fmt} row: {type(exc).__name__}: {exc}") from exc


def load_task_file(
    path: str | Path, fmt: str = "spec", *, repo_dir: str | Path | None = None
) -> TaskSpec:
    """Read the task file at `path` (one JSON object in `fmt`).

    Raises:
        TaskSpecError: the file is missing or unreadable, is not JSON, or is not a valid task;
            the message starts with the path.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise TaskSpecError(f"{path}: cannot read the task file: {why}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskSpecError(
            f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    try:
        return task_from_json(data, fmt, repo_dir=repo_dir)
    except TaskSpecError as exc:
        raise TaskSpecError(f"{path}: {exc}") from exc
