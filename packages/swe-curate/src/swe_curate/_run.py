"""The whole curation pipeline over a batch of rows (``swe-curate run``), Arctic-SWE §4.

Per task: Pipeline 1 (audit) → Pipeline 2 (judge) → test strengthening when the judge finds the
suite ``too_loose`` → one final ``run`` record saying whether the task is kept and, if so, the
row to train on (the audited task; its rewritten issue; or its strengthened suite). Every stage
record goes to ``OUT/records.jsonl``; ``OUT/kept.jsonl`` (native rows) and ``OUT/dropped.jsonl``
(id, verdict, stage, reason) are rewritten from the final records at the end of each run.

Resumable: a task with a final record is skipped, a task with some stage records resumes after
the last one (records are fsynced per line); ``force`` re-processes named ids from scratch.
Tasks run in parallel on a swe-sandbox pool of ``workers`` sandboxes, one task per worker.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import attrs

from swe_curate._audit import STAGE as AUDIT
from swe_curate._audit import AuditConfig, audit_task
from swe_curate._errors import CurateError, TaskInputError
from swe_curate._importers import ImportedRow, task_to_row
from swe_curate._judge import Judge
from swe_curate._judging import STAGE as JUDGE
from swe_curate._judging import JudgeConfig, judge_task, task_after_audit
from swe_curate._records import CurationRecord, RecordStore
from swe_curate._scorer import Scorer
from swe_curate._strengthen import STAGE as STRENGTHEN
from swe_curate._strengthen import StrengthenConfig, strengthen_task
from swe_curate._verdicts import Verdict
from swe_sandbox import TaskSpec

FINAL = "run"
"""Stage name of the final per-task record."""
STAGES = (AUDIT, JUDGE, STRENGTHEN)


@attrs.frozen
class PipelineConfig:
    """Knobs of one batch run, :func:`run_pipeline` (the ``swe-curate run`` flags)."""

    workers: int = 1
    force: frozenset[str] = frozenset()
    audit: AuditConfig = attrs.field(factory=AuditConfig)
    judge: JudgeConfig = attrs.field(factory=JudgeConfig)
    strengthen: StrengthenConfig = attrs.field(factory=StrengthenConfig)

    def __attrs_post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")


@attrs.frozen
class RunOutput:
    """Where a run writes: the record store and the kept / dropped row files under ``out``."""

    out: Path

    @property
    def records(self) -> Path:
        return self.out / "records.jsonl"

    @property
    def kept(self) -> Path:
        return self.out / "kept.jsonl"

    @property
    def dropped(self) -> Path:
        return self.out / "dropped.jsonl"


class _Ledger:
    """The record store shared by the worker threads (appends serialised by a lock), plus the
    stage records a resumed run may reuse."""

    def __init__(self, store: RecordStore, force: frozenset[str]) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._done = {stage: store.latest(stage) for stage in STAGES}
        self._force = force

    def reusable(self, stage: str, instance_id: str) -> CurationRecord | None:
        if instance_id in self._force:
            return None
        return self._done[stage].get(instance_id)

    def append(self, record: CurationRecord) -> CurationRecord:
        with self._lock:
            self.store.append(record)
        return record


def _stage(
    ledger: _Ledger, stage: str, instance_id: str, work: Callable[[], CurationRecord]
) -> CurationRecord:
    """The stage's record: reused from an interrupted run, or computed and appended now."""
    found = ledger.reusable(stage, instance_id)
    return found if found is not None else ledger.append(work())


def curate_one(
    row: ImportedRow, scorer: Scorer, judge: Judge, ledger: _Ledger, config: PipelineConfig
) -> CurationRecord:
    """All stages for one row; returns the final record (also appended)."""
    began = time.monotonic()
    iid = row.instance_id
    if row.task is None:
        bad = CurationRecord(iid, AUDIT, row.verdict, row.error)
        return ledger.append(_final(ledger.append(bad), None, began))
    task = row.task
    audit = _stage(ledger, AUDIT, iid, lambda: audit_task(task, scorer, config.audit))
    if audit.verdict is not Verdict.ADMITTED:
        return ledger.append(_final(audit, None, began))
    judged = _stage(
        ledger, JUDGE, iid, lambda: judge_task(task, scorer, judge, audit, config.judge)
    )
    kept: dict[str, Any] | None = None
    if judged.verdict in (Verdict.ACCEPTED, Verdict.ISSUE_REWRITTEN):
        kept = task_to_row(_kept_task(task, audit, judged))
    if judged.verdict is not Verdict.TOO_LOOSE:
        why = f"judge verdict is {judged.verdict.value}; only too_loose suites are strengthened"
        ledger.append(CurationRecord(iid, STRENGTHEN, Verdict.SKIPPED, why))
        return ledger.append(_final(judged, kept, began))
    repaired = _stage(
        ledger,
        STRENGTHEN,
        iid,
        lambda: strengthen_task(task, scorer, judged, audit, config.strengthen),
    )
    if repaired.verdict is Verdict.STRENGTHENED:
        kept = dict(repaired.measurements["task"])
    return ledger.append(_final(repaired, kept, began))


def _kept_task(task: TaskSpec, audit: CurationRecord, judged: CurationRecord) -> TaskSpec:
    kept = task_after_audit(task, audit)
    if judged.verdict is Verdict.ISSUE_REWRITTEN and judged.rewritten_issue:
        kept = attrs.evolve(kept, problem_statement=judged.rewritten_issue)
    return kept


def _final(last: CurationRecord, kept: dict[str, Any] | None, began: float) -> CurationRecord:
    return CurationRecord(
        last.instance_id,
        FINAL,
        last.verdict,
        last.reason,
        {"kept": kept is not None, "decided_by": last.stage, "row": kept},
        elapsed_s=time.monotonic() - began,
    )


def run_pipeline(
    rows: Iterable[ImportedRow],
    output: RunOutput,
    scorer_factory: Callable[[], Scorer],
    judge_factory: Callable[[], Judge],
    config: PipelineConfig = PipelineConfig(),
    on_done: Callable[[CurationRecord], None] = lambda record: None,
    on_start: Callable[[int, int], None] = lambda pending, skipped: None,
) -> list[CurationRecord]:
    """Curate every row not finished yet; returns the final records of this batch's ids.

    ``scorer_factory`` / ``judge_factory`` make one scorer and one judge per worker thread.
    ``on_start(pending, skipped)`` and ``on_done(final record)`` drive a progress display.
    """
    output.out.mkdir(parents=True, exist_ok=True)
    store = RecordStore(output.records)
    ledger = _Ledger(store, config.force)
    all_rows = _unique(rows)
    finished = store.latest(FINAL)
    pending = [
        r for r in all_rows if r.instance_id not in finished or r.instance_id in config.force
    ]
    on_start(len(pending), len(all_rows) - len(pending))
    local = threading.local()
    made: list[tuple[Scorer, Judge]] = []
    made_lock = threading.Lock()

    def worker(row: ImportedRow) -> CurationRecord:
        if not hasattr(local, "tools"):
            local.tools = (scorer_factory(), judge_factory())
            with made_lock:
                made.append(local.tools)
        scorer, judge = local.tools
        try:
            return curate_one(row, scorer, judge, ledger, config)
        except TaskInputError as exc:  # raised outside a stage (e.g. by the pool's loader)
            failed = CurationRecord(row.instance_id, AUDIT, Verdict.for_input_error(exc), str(exc))
            return ledger.append(_final(ledger.append(failed), None, time.monotonic()))
        except CurateError as exc:
            failed = CurationRecord(row.instance_id, AUDIT, Verdict.SANDBOX_ERROR, str(exc))
            return ledger.append(_final(ledger.append(failed), None, time.monotonic()))

    try:
        with ThreadPoolExecutor(config.workers, thread_name_prefix="swe-curate") as pool:
            futures = [pool.submit(worker, row) for row in pending]
            try:
                for future in as_completed(futures):
                    on_done(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    finally:
        for scorer, _judge in made:
            close = getattr(scorer, "close", None)
            if close is not None:
                close()
        write_outputs(store, output, [r.instance_id for r in all_rows])
    latest = store.latest(FINAL)
    return [latest[r.instance_id] for r in all_rows if r.instance_id in latest]


def _unique(rows: Iterable[ImportedRow]) -> list[ImportedRow]:
    """Rows in file order; a repeated instance id keeps its first row."""
    seen: dict[str, ImportedRow] = {}
    for row in rows:
        seen.setdefault(row.instance_id, row)
    return list(seen.values())


def write_outputs(store: RecordStore, output: RunOutput, order: Sequence[str]) -> None:
    """Rewrite kept.jsonl / dropped.jsonl from the final records (atomically, input order)."""
    finals = store.latest(FINAL)
    kept, dropped = [], []
    for iid in order:
        rec = finals.get(iid)
        if rec is None:
            continue
        if rec.measurements.get("kept"):
            kept.append(json.dumps(rec.measurements["row"], sort_keys=True))
        else:
            stage = rec.measurements.get("decided_by", "")
            item = {"instance_id": iid, "verdict": rec.verdict.value, "stage": stage}
            dropped.append(json.dumps({**item, "reason": rec.reason}, sort_keys=True))
    _atomic_lines(output.kept, kept)
    _atomic_lines(output.dropped, dropped)


def _atomic_lines(path: Path, lines: Sequence[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)


def stage_rates(records: Iterable[CurationRecord]) -> dict[str, Mapping[str, float]]:
    """Per stage: tasks, summed seconds and tasks per hour of one worker (from ``elapsed_s``)."""
    totals: dict[str, list[float]] = {}
    for rec in records:
        if rec.stage in STAGES and rec.verdict is not Verdict.SKIPPED:
            totals.setdefault(rec.stage, []).append(rec.elapsed_s)
    return {
        stage: {
            "tasks": len(times),
            "seconds": round(sum(times), 2),
            "tasks_per_hour": round(3600 * len(times) / sum(times), 1) if sum(times) else 0.0,
        }
        for stage, times in totals.items()
    }
