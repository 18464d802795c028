"""Row importers: SWE-bench, SWE-rebench, R2E-Gym and the native deck format.

Rows are read from JSON lines, a JSON array, or parquet (when ``pyarrow`` is installed).
Parsing a row into a :class:`swe_sandbox.TaskSpec` is delegated to swe-sandbox's loaders, so
a task curated here is exactly the task the sandbox will grade in training. A row that cannot
be parsed is yielded as an :class:`ImportedRow` carrying the error, never raised: the caller
records it as ``malformed_row`` and carries on.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from swe_curate._errors import CurateError, MalformedRowError
from swe_curate._verdicts import Verdict
from swe_sandbox import (
    RepoKind,
    RepoNotFoundError,
    RepoSource,
    SandboxError,
    TaskSpec,
    TaskSpecError,
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)


class RowFormat(enum.StrEnum):
    """Which public schema a row follows."""

    AUTO = "auto"
    NATIVE = "native"
    SWEBENCH = "swebench"
    SWEREBENCH = "swerebench"
    R2EGYM = "r2egym"


@attrs.frozen
class ImportedRow:
    """One input row: a task, or the reason it is not one (``task is None``)."""

    index: int
    instance_id: str
    task: TaskSpec | None
    error: str = ""
    verdict: Verdict = Verdict.MALFORMED_ROW
    """What to record when ``task is None``: ``malformed_row`` or ``missing_test_command``."""


def detect_format(row: Mapping[str, Any]) -> RowFormat:
    """Guess the schema from the fields present."""
    if "repo" in row and isinstance(row.get("repo"), Mapping):
        return RowFormat.NATIVE
    if "expected_output_json" in row or ("commit_hash" in row and "docker_image" in row):
        return RowFormat.R2EGYM
    if "install_config" in row:
        return RowFormat.SWEREBENCH
    return RowFormat.SWEBENCH


def task_to_row(task: TaskSpec) -> dict[str, Any]:
    """The native deck row of a task (what ``swe-curate inject`` writes)."""
    return {
        "instance_id": task.instance_id,
        "repo": {
            "kind": task.repo.kind.value,
            "location": task.repo.location,
            "path_in_image": task.repo.path_in_image,
            "strip_components": task.repo.strip_components,
        },
        "base_commit": task.base_commit,
        "problem_statement": task.problem_statement,
        "gold_patch": task.gold_patch,
        "test_patch": task.test_patch,
        "graded_files": list(task.graded_files),
        "FAIL_TO_PASS": list(task.fail_to_pass),
        "PASS_TO_PASS": list(task.pass_to_pass),
        "test_command": task.test_command,
        "runner_files": dict(task.runner_files),
        "setup_commands": list(task.setup_commands),
        "environment": task.environment,
    }


def task_from_native_row(row: Mapping[str, Any]) -> TaskSpec:
    """Inverse of :func:`task_to_row`."""
    repo = row["repo"]
    source = RepoSource(
        kind=RepoKind(repo["kind"]),
        location=str(repo["location"]),
        path_in_image=str(repo.get("path_in_image", "/testbed")),
        strip_components=int(repo.get("strip_components", 0)),
    )
    extra: dict[str, Any] = {}
    if row.get("test_command"):
        extra["test_command"] = str(row["test_command"])
    if row.get("environment"):
        extra["environment"] = str(row["environment"])
    return TaskSpec(
        instance_id=str(row["instance_id"]),
        repo=source,
        base_commit=row.get("base_commit"),
        problem_statement=str(row.get("problem_statement") or ""),
        gold_patch=str(row.get("gold_patch") or ""),
        test_patch=str(row.get("test_patch") or ""),
        graded_files=tuple(row.get("graded_files") or ()),
        fail_to_pass=tuple(row.get("FAIL_TO_PASS") or ()),
        pass_to_pass=tuple(row.get("PASS_TO_PASS") or ()),
        runner_files=dict(row.get("runner_files") or {}),
        setup_commands=tuple(row.get("setup_commands") or ()),
        **extra,
    )


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | MalformedRowError]]:
    """Yield ``(index, row)`` pairs; an undecodable line yields a :class:`MalformedRowError`."""
    path = Path(path)
    if path.suffix == ".parquet":
        yield from _read_parquet(path)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CurateError(f"{path}: cannot read task rows: {exc}") from exc
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            yield 0, MalformedRowError(f"{path}: not a JSON array: {exc}")
            return
        for index, row in enumerate(rows):
            yield index, row if isinstance(row, dict) else MalformedRowError("row is not an object")
        return
    for index, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield index, MalformedRowError(f"line {index + 1}: not JSON: {exc}")
            continue
        yield (
            index,
            row if isinstance(row, dict) else MalformedRowError(f"line {index + 1}: not an object"),
        )


def _read_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any] | MalformedRowError]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise MalformedRowError(
            f"{path}: reading parquet needs pyarrow (pip install pyarrow)"
        ) from exc
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise CurateError(f"{path}: cannot read task rows: {exc}") from exc
    yield from enumerate(table.to_pylist())


def import_rows(
    path: str | Path,
    fmt: RowFormat = RowFormat.AUTO,
    *,
    repo_for: Callable[[Mapping[str, Any]], RepoSource | None] | None = None,
    repo_dir: str | Path | None = None,
) -> Iterator[ImportedRow]:
    """Parse every row of ``path`` into a task (or a recorded error).

    ``repo_for`` may map a row to a local repository source (e.g. an image built here) instead
    of the default registry image the public datasets name; ``repo_dir`` takes dataset rows'
    repositories from local checkouts (:func:`swe_sandbox.find_checkout`). A row whose checkout
    is missing is recorded as ``missing_repo``; the other rows are unaffected.
    """
    for index, row in read_rows(path):
        if isinstance(row, MalformedRowError):
            yield ImportedRow(index, f"row-{index}", None, str(row))
            continue
        yield parse_row(index, row, fmt, repo_for, repo_dir=repo_dir)


def parse_row(
    index: int,
    row: Mapping[str, Any],
    fmt: RowFormat = RowFormat.AUTO,
    repo_for: Callable[[Mapping[str, Any]], RepoSource | None] | None = None,
    *,
    repo_dir: str | Path | None = None,
) -> ImportedRow:
    """One row to one :class:`ImportedRow` (never raises on bad input)."""
    name = str(row.get("instance_id") or row.get("repo_name") or f"row-{index}")
    chosen = detect_format(row) if fmt is RowFormat.AUTO else fmt
    try:
        repo = repo_for(row) if repo_for is not None else None
        if chosen is RowFormat.NATIVE:
            task = task_from_native_row(row)
        else:
            task = _DATASET_LOADERS[chosen](row, repo=repo, repo_dir=repo_dir)
    except (SandboxError, KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, RepoNotFoundError):
            verdict = Verdict.MISSING_REPO
        elif isinstance(exc, TaskSpecError) and "test_command" in str(exc):
            verdict = Verdict.MISSING_TEST_COMMAND
        else:
            verdict = Verdict.MALFORMED_ROW
        why = f"{chosen.value} row: {type(exc).__name__}: {exc}"
        return ImportedRow(index, name, None, why, verdict)
    return ImportedRow(index, task.instance_id, task)


_DATASET_LOADERS: dict[RowFormat, Callable[..., TaskSpec]] = {
    RowFormat.SWEBENCH: task_from_swebench_row,
    RowFormat.SWEREBENCH: task_from_swerebench_row,
    RowFormat.R2EGYM: task_from_r2egym_row,
}
