"""Every policy evaluation of a run, rollout by rollout: ``RUN/evaluations.jsonl``.

The stress test's verdict (Arctic-SWE §3.1: the pool success climbs *and holds*) compares
evaluations of one run with each other — the warm start (update 0) with the final window, a
reference window with the final one — and ``arctic-swe ablate --seeds`` compares runs. Those
comparisons are paired: every evaluation of a run samples task ``k``'s sample ``s`` from the
same stream, so the same (task, sample) cell of two evaluations differs only by the policy.
A rate per evaluation cannot be paired; this log keeps each cell's outcome (``"1"`` solved,
``"0"`` not), per task in sample order, for the pool and the held-out split alike. It is the
compact raw data a results folder commits beside ``metrics.jsonl``.

One JSON object per line, appended (flushed, fsynced) as an evaluation finishes. A resumed run
redoes an evaluation it had not recorded and retrains the updates after its checkpoint, so
:meth:`EvaluationLog.read` keeps the *last* line of each (split, step) and
:meth:`EvaluationLog.drop_after` forgets evaluations of updates the resume will redo.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arctic_swe._atomic import atomic_write_text
from arctic_swe._wilson import SolvedShare
from arctic_swe.metrics._record import MetricsError, append_json_line, read_json_lines

#: Under the run directory.
EVALUATIONS = "evaluations.jsonl"
#: The splits a run evaluates: the training pool and the deck's held-out split.
POOL_SPLIT = "pool"
HELDOUT_SPLIT = "heldout"
#: Default windows, as fractions of the run's updates: ``(start, end]``.
REFERENCE_WINDOW = (1 / 3, 2 / 3)
FINAL_WINDOW = (2 / 3, 1.0)


@dataclass(frozen=True)
class EvalRecord(SolvedShare):
    """One evaluation of one policy version on one split.

    ``step``: the update that published the weights (0: the warm start, before any update);
    ``stream``: the name of the sampling streams (``arctic_swe.evaluate.STREAMS``) derived from
    ``seed``; ``outcomes``: task id -> one character per sample, in sample order (``"1"``:
    solved under the gated reward, ``"0"``: not), every task with the same number of samples.
    """

    split: str
    step: int
    version: int
    stream: str
    seed: int
    outcomes: Mapping[str, str]
    seconds: float = 0.0
    digest: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. terminations

    def __post_init__(self) -> None:
        if self.step < 0 or self.version < 0:
            raise MetricsError(f"evaluation at step {self.step}, version {self.version}")
        lengths = {len(cells) for cells in self.outcomes.values()}
        if len(lengths) > 1 or 0 in lengths:
            raise MetricsError(f"evaluation at step {self.step}: tasks with unequal samples")
        bad = [t for t, cells in self.outcomes.items() if set(cells) - {"0", "1"}]
        if bad:
            raise MetricsError(f"evaluation at step {self.step}: outcomes of {bad[0]} not 0/1")

    @property
    def samples(self) -> int:
        """Samples per task (0 for an evaluation of no task)."""
        return len(next(iter(self.outcomes.values()), ""))

    @property
    def rollouts(self) -> int:
        return self.samples * len(self.outcomes)

    @property
    def solved(self) -> int:
        return sum(cells.count("1") for cells in self.outcomes.values())

    def task_rates(self) -> dict[str, float]:
        """Task id -> share of its samples solved."""
        return {t: cells.count("1") / len(cells) for t, cells in self.outcomes.items()}

    def to_json(self) -> str:
        return json.dumps(
            {
                "split": self.split,
                "step": self.step,
                "version": self.version,
                "stream": self.stream,
                "seed": self.seed,
                "outcomes": dict(self.outcomes),
                "seconds": round(self.seconds, 3),
                "digest": self.digest,
                "extra": dict(self.extra),
            },
            sort_keys=True,
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> EvalRecord:
        try:
            return cls(
                split=str(data["split"]),
                step=int(data["step"]),
                version=int(data["version"]),
                stream=str(data["stream"]),
                seed=int(data["seed"]),
                outcomes={str(k): str(v) for k, v in dict(data["outcomes"]).items()},
                seconds=float(data.get("seconds", 0.0)),
                digest=str(data.get("digest", "")),
                extra=dict(data.get("extra", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MetricsError(f"not an evaluation record: {exc!r}") from exc


class EvaluationLog:
    """Append-only ``evaluations.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: EvalRecord) -> None:
        append_json_line(self.path, record.to_json())

    def _lines(self) -> Iterator[EvalRecord]:
        return (EvalRecord.from_mapping(data) for data in read_json_lines(self.path))

    def read(self) -> list[EvalRecord]:
        """The last record of each (split, step), ordered by split then step."""
        latest = {(r.split, r.step): r for r in self._lines()}
        return [latest[key] for key in sorted(latest)]

    def drop_after(self, step: int) -> None:
        """Forget evaluations of updates after ``step`` (a resume retrains them)."""
        kept = [r for r in self.read() if r.step <= step]
        atomic_write_text(self.path, "".join(r.to_json() + "\n" for r in kept))


def of_split(records: Sequence[EvalRecord], split: str) -> list[EvalRecord]:
    """The records of ``split`` in step order."""
    return sorted((r for r in records if r.split == split), key=lambda r: r.step)


def in_window(
    records: Sequence[EvalRecord], updates: int, window: tuple[float, float]
) -> list[EvalRecord]:
    """The records whose step lies in ``(start * updates, end * updates]``, in step order
    (``window = (start, end)``, fractions of a run of ``updates`` updates)."""
    start, end = window
    return sorted(
        (r for r in records if start * updates < r.step <= end * updates), key=lambda r: r.step
    )
