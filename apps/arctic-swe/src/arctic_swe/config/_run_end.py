"""How a run ended: ``RUN/finished.json``, written once the loop stops on its own.

A stress test with eviction can stop before ``run.updates``: once every pool task has retired
(Arctic-SWE §3.4 easy/hard eviction; the recipe does not reactivate retired tasks) there is
nothing left to train, and the loop ends. Without a record of that, such a run looks
interrupted — ``arctic-swe ablate`` would resume it on every invocation — and nothing says why
the curve stops. The file is absent while a run is in progress and after a crash or an
interrupt (those are resumed from the last checkpoint).
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import attrs

from arctic_swe._atomic import atomic_write_text
from arctic_swe.config._errors import RunDirError
from arctic_swe.config._rundir import RunDir

FINISHED_FILE = "finished.json"


class EndReason(Enum):
    """Why the loop stopped."""

    UPDATES = "updates"  # run.updates optimizer steps taken
    DECK_EXHAUSTED = "deck_exhausted"  # every pool task retired: nothing left to train
    NO_GROUPS = "no_groups"  # active tasks left, but no training group could be collected
    STALLED = "stalled"  # run.stop_after_zero_gradient updates in a row without a gradient


@attrs.frozen
class RunEnd:
    """The end of a run: ``reason``, the last optimizer ``step`` (the final checkpoint is
    ``checkpoints/step-<step>``), the configured ``updates``, and the deck's ``retired`` count
    out of ``pool_size`` tasks at the end."""

    reason: EndReason
    step: int
    updates: int
    retired: int
    pool_size: int

    @property
    def early(self) -> bool:
        """Stopped before ``run.updates``."""
        return self.step < self.updates

    def describe(self) -> str:
        """One sentence for the console and the comparison table."""
        if self.reason is EndReason.UPDATES:
            return f"finished: {self.step} of {self.updates} updates"
        if self.reason is EndReason.DECK_EXHAUSTED:
            return (
                f"stopped at update {self.step} of {self.updates}: every pool task retired "
                f"({self.retired} of {self.pool_size}; deck exhausted), nothing left to train"
            )
        if self.reason is EndReason.STALLED:
            return (
                f"stopped at update {self.step} of {self.updates}: stalled, the last updates "
                "had no gradient (every trained group scored the same for all its rollouts; "
                f"{self.retired} of {self.pool_size} tasks retired)"
            )
        return (
            f"stopped at update {self.step} of {self.updates}: no training group could be "
            f"collected ({self.retired} of {self.pool_size} tasks retired)"
        )


def write_run_end(run: RunDir, end: RunEnd) -> None:
    """Write ``RUN/finished.json`` atomically."""
    payload = attrs.asdict(end, value_serializer=_serialize)
    atomic_write_text(
        run.root / FINISHED_FILE, json.dumps(payload, sort_keys=True) + "\n", fsync=True
    )


def read_run_end(run: RunDir) -> RunEnd | None:
    """The recorded end of ``run``, or ``None`` when it has none (in progress, crashed,
    interrupted). Raises :class:`RunDirError` for a file that is not a run end."""
    path = run.root / FINISHED_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return RunEnd(
            reason=EndReason(data["reason"]),
            step=_count(data["step"]),
            updates=_count(data["updates"]),
            retired=_count(data["retired"]),
            pool_size=_count(data["pool_size"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path} is not a run end record: {exc}") from exc


def clear_run_end(run: RunDir) -> None:
    """Remove the record (a resumed run is in progress again until its loop stops)."""
    (run.root / FINISHED_FILE).unlink(missing_ok=True)


def _serialize(_instance: Any, _field: Any, value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r}")
    return value
