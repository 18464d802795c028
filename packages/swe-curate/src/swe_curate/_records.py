"""Per-task records and the resumable JSON-lines store.

One line per (task, stage) judgement. The store is append-only and fsynced per record, so a run
killed at any point loses at most the record being written; on restart the tasks already judged
for the stage are skipped (``RecordStore.done``). A torn last line left by a crash is ignored on
load and overwritten by the next append's newline-terminated record.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from swe_curate._errors import CurateError
from swe_curate._verdicts import Verdict

JSONValue = Any
"""A value that ``json.dumps`` accepts (kept loose on purpose: measurements are free-form)."""


@attrs.frozen
class CurationRecord:
    """The outcome of one stage (``audit``, ``judge``, ``strengthen``, ``inject``) for one task.

    ``measurements`` holds everything that was measured (per-test outcomes per run, timings,
    binding assertions); ``evidence`` holds the counterfactual patches and their scores.
    """

    instance_id: str
    stage: str
    verdict: Verdict
    reason: str = ""
    measurements: Mapping[str, JSONValue] = attrs.field(factory=dict)
    evidence: tuple[Mapping[str, JSONValue], ...] = ()
    rewritten_issue: str | None = None
    elapsed_s: float = 0.0
    created_at: float = attrs.field(factory=time.time)

    def to_json(self) -> str:
        """One line of JSON (no trailing newline)."""
        payload = {
            "instance_id": self.instance_id,
            "stage": self.stage,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "measurements": dict(self.measurements),
            "evidence": [dict(item) for item in self.evidence],
            "rewritten_issue": self.rewritten_issue,
            "elapsed_s": self.elapsed_s,
            "created_at": self.created_at,
        }
        return json.dumps(payload, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, line: str) -> CurationRecord:
        """Parse one line written by :meth:`to_json`; raises :class:`CurateError` on bad input."""
        try:
            raw = json.loads(line)
            return cls(
                instance_id=str(raw["instance_id"]),
                stage=str(raw["stage"]),
                verdict=Verdict(raw["verdict"]),
                reason=str(raw.get("reason", "")),
                measurements=dict(raw.get("measurements") or {}),
                evidence=tuple(dict(item) for item in raw.get("evidence") or ()),
                rewritten_issue=raw.get("rewritten_issue"),
                elapsed_s=float(raw.get("elapsed_s", 0.0)),
                created_at=float(raw.get("created_at", 0.0)),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CurateError(f"not a task record: {line[:120]!r}: {exc}") from exc


class RecordStore:
    """Append-only JSON-lines file of :class:`CurationRecord`, one per judged (task, stage)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __iter__(self) -> Iterator[CurationRecord]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    # Torn write from a crash: the record never completed, so it never counted.
                    return
                stripped = line.strip()
                if stripped:
                    yield CurationRecord.from_json(stripped)

    def records(self, stage: str | None = None) -> list[CurationRecord]:
        """All complete records, optionally only those of one stage, in file order."""
        return [rec for rec in self if stage is None or rec.stage == stage]

    def latest(self, stage: str) -> dict[str, CurationRecord]:
        """The last record of ``stage`` per instance id."""
        return {rec.instance_id: rec for rec in self.records(stage)}

    def done(self, stage: str) -> set[str]:
        """Instance ids already judged for ``stage`` (what a resumed run skips)."""
        return {rec.instance_id for rec in self.records(stage)}

    def append(self, record: CurationRecord) -> None:
        """Durably append one record (fsynced before returning)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = record.to_json() + "\n"
        with self.path.open("a+b") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    # A torn record precedes us: terminate it so ours starts on its own line;
                    # loading stops at the torn line only if it is the last one, so drop it.
                    self._truncate_torn_tail(handle)
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())

    @staticmethod
    def _truncate_torn_tail(handle: Any) -> None:
        handle.seek(0)
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
        handle.seek(keep)


def summarize(records: list[CurationRecord]) -> dict[Verdict, int]:
    """Count records per verdict (the CLI's summary table)."""
    counts: dict[Verdict, int] = {}
    for rec in records:
        counts[rec.verdict] = counts.get(rec.verdict, 0) + 1
    return counts
