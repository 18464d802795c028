"""Validate a deck with swe-curate's Pipeline 1 (execution only; paper §4).

Each task is graded on its buggy tree and on its gold tree ``reruns`` times each through the
very scorer training uses (swe-sandbox's grader): the FAIL_TO_PASS test must fail on buggy and
pass on gold, PASS_TO_PASS must pass on both, and no outcome may change across reruns (stable).
Records go to ``audit.jsonl`` (resumable: tasks already judged are skipped); rejected tasks are
marked dropped in the manifest, never deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from arctic_swe.deck._deck import DeckTask, StoredDeck, load_deck, mark_dropped
from arctic_swe.deck._errors import DeckConfigError
from swe_curate import (
    AUDIT_STAGE,
    AuditConfig,
    CurationRecord,
    RecordStore,
    SandboxScorer,
    audit_task,
)
from swe_sandbox import Backend, Limits

AUDIT_FILE = "audit.jsonl"


@dataclass(frozen=True)
class ValidationReport:
    """Outcome of :func:`validate_deck`: admitted and rejected ids (with verdicts)."""

    admitted: tuple[str, ...]
    rejected: dict[str, str]
    skipped: int

    @property
    def ok(self) -> bool:
        """Every validated task admitted."""
        return not self.rejected


def validate_deck(
    deck: StoredDeck,
    backend: Backend,
    *,
    splits: Iterable[str] = ("pool", "heldout"),
    reruns: int = 2,
    workers: int = 2,
    limits: Limits | None = None,
    only: Collection[str] | None = None,
    on_task: Callable[[CurationRecord], None] | None = None,
) -> tuple[StoredDeck, ValidationReport]:
    """Run Pipeline 1 on ``splits`` of ``deck`` (``workers`` sandboxes in parallel).

    ``only`` restricts the run to those task ids (a sample). Returns the reloaded deck
    (rejected tasks dropped) and the report. ``on_task`` is called
    once per finished task (progress bars). The warm-start split is validated implicitly: the
    scripted expert's submit is graded by the same scorer.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise DeckConfigError(f"workers must be a positive int, got {workers!r}")
    config = AuditConfig(reruns=reruns, binding=False)
    store = RecordStore(deck.root / AUDIT_FILE)
    done = store.latest(AUDIT_STAGE)
    splits = tuple(splits)
    wanted = {
        task.instance_id
        for split in splits
        for task in deck.split(split)
        if only is None or task.instance_id in only
    }
    todo = [task for task in deck if task.instance_id in wanted - set(done)]
    lock = threading.Lock()
    local = threading.local()
    scorers: list[SandboxScorer] = []

    def audit(task: DeckTask) -> CurationRecord:
        scorer = getattr(local, "scorer", None)
        if scorer is None:
            scorer = local.scorer = SandboxScorer(backend, limits)
            with lock:
                scorers.append(scorer)
        record = audit_task(task.spec, scorer, config)
        with lock:
            store.append(record)
            if on_task is not None:
                on_task(record)
        return record

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deck-audit") as pool:
            records = list(pool.map(audit, todo))
    finally:
        for scorer in scorers:
            scorer.close()
    latest = {**done, **{record.instance_id: record for record in records}}
    rejected = {
        task_id: record.verdict.value
        for task_id, record in latest.items()
        if task_id in wanted and not record.verdict.is_positive
    }
    if rejected:
        mark_dropped(deck.root, set(rejected))
    admitted = tuple(sorted(wanted - set(rejected)))
    report = ValidationReport(admitted, rejected, skipped=len(wanted) - len(todo))
    return load_deck(deck.root), report
