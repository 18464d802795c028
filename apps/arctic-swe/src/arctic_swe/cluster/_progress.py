"""The launcher's one progress view: updates, reward and processes up.

The loop runs in a child process and appends one JSON object per update to
``RUN/metrics.jsonl``; the view tails that file. On a terminal it is a ``rich`` progress bar;
otherwise one plain line per event (``update 2/3 reward 0.125 …``, ``engine-0 ready at …``),
so CI logs stay readable.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ClusterView:
    """Progress of a cluster run; call :meth:`event` for process news and :meth:`poll`
    regularly to pick up new updates."""

    def __init__(self, updates: int, metrics: Path, console: Console) -> None:
        self.updates = updates
        self.metrics = metrics
        self.console = console
        self.live = console.is_terminal
        self.offset = 0
        self.records: list[dict[str, Any]] = []
        self.up, self.total = 0, 0
        self._progress: Progress | None = None
        self._task: Any = None
        self.started = time.monotonic()
        self.shown_step = 0  # updates up to this one are on screen (or were before a resume)

    def skip_existing(self) -> None:
        """Count the updates already in the log (a resumed run) without printing them."""
        if self.metrics.is_file():
            for line in self.metrics.read_bytes().splitlines():
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    self.shown_step = max(self.shown_step, int(json.loads(line).get("step", 0)))

    def __enter__(self) -> ClusterView:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]cluster"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("updates", total=self.updates, status="")
        return self

    def __exit__(self, *exc: object) -> None:
        self.poll()
        if self._progress is not None:
            self._progress.stop()

    def event(self, line: str) -> None:
        """One process event (started, ready, died, stopping), stamped with the seconds
        since the launcher started."""
        line = f"[{time.monotonic() - self.started:7.1f}s] {line}"
        if self._progress is not None:
            self._progress.console.print(line)
        else:
            self.console.print(line, highlight=False, soft_wrap=True)

    def processes(self, up: int, total: int) -> None:
        self.up, self.total = up, total
        self._refresh()

    def poll(self) -> None:
        """Read the metrics lines appended since the last call."""
        if not self.metrics.is_file():
            return
        if self.metrics.stat().st_size < self.offset:  # a resumed loop cut the log back
            self.offset, self.records = 0, []
        with self.metrics.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a half-written last line waits
        self.offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            self.records.append(record)
            step = int(record.get("step", 0))
            if self._progress is None and step > self.shown_step:  # each update once
                self.console.print(self._line(record), highlight=False, soft_wrap=True)
            self.shown_step = max(self.shown_step, step)
        self._refresh()

    def _line(self, record: dict[str, Any]) -> str:
        return (
            f"[{time.monotonic() - self.started:7.1f}s] update {record.get('step', '?')}/{self.updates} "
            f"reward {record.get('reward', 0.0):.3f} "
            f"solved {record.get('solved_rate', 0.0):.2f} "
            f"engines {len(record.get('engine_groups', {}))} "
            f"processes up {self.up}/{self.total}"
        )

    def _refresh(self) -> None:
        if self._progress is None:
            return
        last = self.records[-1] if self.records else {}
        status = f"reward {last.get('reward', 0.0):.3f}  processes up {self.up}/{self.total}"
        self._progress.update(self._task, completed=len(self.records), status=status)
