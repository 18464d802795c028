"""Decks of real tasks (Arctic-SWE §4, data curation; §5, per-task environments): dataset rows
(SWE-bench, SWE-rebench, R2E-Gym or swe-curate's native rows) imported, checked one by one and
written as a deck the loop trains on.

Each row is parsed (swe-curate's importers, so curation and training read rows alike) and given
its environment image: the one the row names; with ``build_env``, one built from the row's own
recipe (SWE-rebench's ``install_config``), once per distinct recipe; else ``environment``, an
image built with ``swe-sandbox image build-env``. It is then prepared on the host (the base
commit must exist in the repository, the test patch must apply) and, with
``validate="audit"``, run through Pipeline 1 on the chosen backend inside that environment. A
row that fails any step becomes a rejected entry with its reason; the other rows are
unaffected. On disk::

    DIR/deck.json      manifest (format 1, kind "imported"): the admitted tasks, split "pool"
    DIR/tasks.jsonl    the admitted tasks as native rows (``deck.source`` and swe-curate read it)
    DIR/import.jsonl   one record per input row: verdict, reason, seconds
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attrs

from arctic_swe._atomic import atomic_write_text
from arctic_swe.deck._deck import FORMAT_VERSION, MANIFEST, DeckConfig, manifest_config
from arctic_swe.deck._errors import DeckFormatError
from swe_curate import (
    AuditConfig,
    CurateError,
    ImportedRow,
    RowFormat,
    SandboxScorer,
    TaskInputError,
    Verdict,
    audit_task,
    import_rows,
    read_rows,
    task_from_native_row,
    task_to_row,
)
from swe_sandbox import (
    Backend,
    EnvironmentBuildError,
    EnvSpec,
    RepoKind,
    SandboxError,
    TaskSpec,
    build_env_image,
    env_spec_from_row,
    prepare_repo,
)

TASKS_FILE = "tasks.jsonl"
IMPORT_FILE = "import.jsonl"
VALIDATIONS = ("audit", "prepare", "none")


@dataclass(frozen=True)
class ImportedTask:
    """What became of one input row: ``verdict`` is ``admitted`` or why it is not a task."""

    index: int
    instance_id: str
    verdict: str
    reason: str
    seconds: float
    task: TaskSpec | None = None

    @property
    def admitted(self) -> bool:
        """The row became a task of the deck."""
        return self.verdict == "admitted"


@dataclass(frozen=True)
class ImportOptions:
    """How rows become tasks (each field is one ``deck import`` option)."""

    fmt: str = "auto"
    repo_dir: Path | None = None
    environment: str | None = None  # image for rows that name none
    validate: str = "prepare"
    reruns: int = 2
    build_env: bool = False  # build each row's environment from its install_config


def _absolute(task: TaskSpec) -> TaskSpec:
    # A deck outlives the shell it was imported from: relative checkout paths would break.
    if task.repo.kind is RepoKind.IMAGE:
        return task
    location = str(Path(task.repo.location).resolve())
    return attrs.evolve(task, repo=attrs.evolve(task.repo, location=location))


def _with_environment(task: TaskSpec, environment: str | None) -> TaskSpec:
    if environment is None or task.environment is not None:
        return task
    return attrs.evolve(task, environment=environment)


class EnvironmentImages:
    """Environment images of rows that carry a recipe (``env_spec_from_row``), built once per
    distinct recipe; a recipe that failed is not retried within the import."""

    def __init__(self) -> None:
        self._built: dict[EnvSpec, str | EnvironmentBuildError] = {}

    def for_row(self, raw: Mapping[str, Any], task: TaskSpec) -> str | None:
        """The row's environment image tag, or ``None`` when the row carries no recipe.

        Raises `EnvironmentBuildError` (with its step) or `TaskSpecError`."""
        checkout = task.repo.location if task.repo.kind is RepoKind.DIRECTORY else None
        spec = env_spec_from_row(raw, checkout)
        if spec is None:
            return None
        if spec not in self._built:
            try:
                self._built[spec] = build_env_image(spec)
            except EnvironmentBuildError as exc:
                self._built[spec] = exc
        built = self._built[spec]
        if isinstance(built, EnvironmentBuildError):
            raise built
        return built


def check_task(
    row: ImportedRow,
    options: ImportOptions,
    scorer: SandboxScorer | None,
    raw: Mapping[str, Any] | None = None,
    images: EnvironmentImages | None = None,
) -> ImportedTask:
    """Parse, give an environment, prepare and (optionally) audit one row; never raises for a
    bad row. ``raw`` is the row as read (its recipe is built when ``images`` is given)."""
    began = time.monotonic()

    def verdict(name: str, reason: str, task: TaskSpec | None = None) -> ImportedTask:
        seconds = round(time.monotonic() - began, 3)
        return ImportedTask(row.index, row.instance_id, name, reason, seconds, task)

    if row.task is None:
        return verdict(row.verdict.value, row.error)
    task = _absolute(row.task)
    if images is not None and raw is not None and task.environment is None:
        try:
            built = images.for_row(raw, task)
        except EnvironmentBuildError as exc:
            return verdict("environment_build_failed", str(exc))
        except SandboxError as exc:
            return verdict(_error_name(exc), f"{type(exc).__name__}: {exc}")
        task = _with_environment(task, built)
    task = _with_environment(task, options.environment)
    if options.validate == "none":
        return verdict("admitted", "not validated", task)
    try:
        prepare_repo(task)
    except SandboxError as exc:
        return verdict(_error_name(exc), f"{type(exc).__name__}: {exc}")
    if options.validate == "prepare" or scorer is None:
        return verdict("admitted", "prepared: base commit found, test patch applies", task)
    try:
        record = audit_task(task, scorer, AuditConfig(reruns=options.reruns, binding=False))
    except TaskInputError as exc:
        return verdict(Verdict.for_input_error(exc).value, f"{type(exc).__name__}: {exc}")
    except CurateError as exc:
        return verdict("sandbox_error", f"{type(exc).__name__}: {exc}")
    if not record.verdict.is_positive:
        return verdict(record.verdict.value, record.reason)
    return verdict("admitted", f"Pipeline 1: {record.reason}", task)


def _error_name(exc: SandboxError) -> str:
    """A verdict name for a preparation failure (``missing_base_commit``, ``missing_repo``...)."""
    names = {klass.__name__ for klass in type(exc).__mro__}
    for klass, name in (
        ("BaseCommitNotFoundError", "missing_base_commit"),
        ("RepoNotFoundError", "missing_repo"),
        ("PatchApplyError", "patch_does_not_apply"),
        ("TaskSpecError", "malformed_row"),
    ):
        if klass in names:
            return name
    return "sandbox_error"


def import_deck(
    rows: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: ImportOptions,
    backend: Backend | None = None,
    on_task: Callable[[ImportedTask], None] | None = None,
) -> list[ImportedTask]:
    """Import every row of ``rows`` into a deck at ``out`` (replaced); one result per row.

    ``backend`` runs the Pipeline 1 audit (``options.validate == "audit"``). Raises
    :class:`DeckFormatError` when no row became a task (nothing is written then but the
    per-row records).
    """
    if options.validate not in VALIDATIONS:
        raise DeckFormatError(f"validate must be one of {VALIDATIONS}, got {options.validate!r}")
    parsed = import_rows(Path(rows), RowFormat(options.fmt), repo_dir=options.repo_dir)
    raw_rows = dict(read_rows(Path(rows))) if options.build_env else {}
    images = EnvironmentImages() if options.build_env else None
    results: list[ImportedTask] = []
    scorer = SandboxScorer(backend) if backend is not None and options.validate == "audit" else None
    try:
        for row in parsed:
            raw = raw_rows.get(row.index)
            raw = raw if isinstance(raw, Mapping) else None
            result = check_task(row, options, scorer, raw, images)
            results.append(result)
            if on_task is not None:
                on_task(result)
    finally:
        if scorer is not None:
            scorer.close()
    write_imported_deck(Path(out), results)
    return results


def write_imported_deck(out: Path, results: list[ImportedTask]) -> None:
    """Write the manifest, the native rows and the per-row records (see the module doc)."""
    out.mkdir(parents=True, exist_ok=True)
    _write_lines(out / IMPORT_FILE, [_record(result) for result in results])
    admitted = [r.task for r in results if r.admitted and r.task is not None]
    if not admitted:
        raise DeckFormatError(
            f"no row became a task (see {out / IMPORT_FILE} for each row's reason)"
        )
    rows = [task_to_row(task) for task in admitted]
    _write_lines(out / TASKS_FILE, rows)
    config = DeckConfig(seed=0, pool_size=len(rows), heldout_size=0, warmstart_size=0)
    manifest = {
        "format": FORMAT_VERSION,
        "kind": "imported",
        "config": manifest_config(config),
        "tasks": [
            {"instance_id": row["instance_id"], "split": "pool", "task": row} for row in rows
        ],
    }
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")


def _record(result: ImportedTask) -> dict[str, Any]:
    return {
        "index": result.index,
        "instance_id": result.instance_id,
        "verdict": result.verdict,
        "reason": result.reason,
        "seconds": result.seconds,
    }


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def load_task_rows(path: str | os.PathLike[str]) -> dict[str, TaskSpec]:
    """The tasks of a JSON-lines file of rows (``deck.source``), by id, in file order.

    Raises :class:`DeckFormatError` for a missing file, a row that is not a task (naming the
    row and why: run ``arctic-swe deck import`` to sort good rows from bad) or a repeated id.
    """
    source = Path(path)
    if not source.is_file():
        raise DeckFormatError(f"deck.source {source}: no such file")
    tasks: dict[str, TaskSpec] = {}
    try:
        for row in import_rows(source):
            if row.task is None:
                raise DeckFormatError(
                    f"deck.source {source}: row {row.index + 1} ({row.instance_id}) is not a "
                    f"task: {row.error}"
                )
            if row.task.instance_id in tasks:
                raise DeckFormatError(f"deck.source {source}: id {row.instance_id} repeats")
            tasks[row.task.instance_id] = _absolute(row.task)
    except CurateError as exc:
        raise DeckFormatError(f"deck.source {source}: {exc}") from exc
    if not tasks:
        raise DeckFormatError(f"deck.source {source}: no rows")
    return tasks


def task_of_row(row: Mapping[str, Any]) -> TaskSpec:
    """A native row of a deck manifest as a task; :class:`DeckFormatError` when it is not one."""
    try:
        return task_from_native_row(row)
    except (SandboxError, KeyError, TypeError, ValueError) as exc:
        name = row.get("instance_id", "?") if isinstance(row, Mapping) else "?"
        raise DeckFormatError(f"task {name} of the manifest is not a task: {exc}") from exc
