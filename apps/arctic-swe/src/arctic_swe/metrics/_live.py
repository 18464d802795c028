"""A live terminal display of a running stress test (rich), and optional TensorBoard.

The display is a progress bar plus the key figures of the latest update; on a non-terminal
(CI, a pipe) it prints one plain line per update instead. TensorBoard is used only if it is
already installed (it is not a dependency).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from arctic_swe.metrics._record import UpdateMetrics


def describe(record: UpdateMetrics) -> str:
    """One line with the figures a person watches."""
    return (
        f"step {record.step}: reward {record.reward:.3f} "
        # the eviction-adjusted reward counts retired tasks 1.0: say so where it is read
        f"imputed {record.adjusted_reward:.3f} retired {record.retired} "
        f"(back {record.reactivated}) "
        f"kl {record.mismatch_kl:.1e} masked {record.masked_frac:.3f} "
        f"lag {record.lag_mean:.2f}/{record.lag_max} stale {record.stale_dropped} "
        f"wait {record.wait_seconds:.1f}s train {record.train_seconds:.1f}s "
        f"{record.tokens_per_second:.0f} tok/s"
    )


class LiveDisplay:
    """``with LiveDisplay(total, enabled) as live: live.update(record)``."""

    def __init__(
        self, total: int, *, enabled: bool = True, console: Console | None = None, start: int = 0
    ) -> None:
        self.console = console or Console(stderr=True)
        self.rich = enabled and self.console.is_terminal
        self.total, self.start = total, start
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> LiveDisplay:
        if self.rich:
            self._progress = Progress(
                TextColumn("[bold]overfit"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=self.total, completed=self.start)
        return self

    def update(self, record: UpdateMetrics) -> None:
        line = describe(record)
        if self._progress is not None:
            self._progress.update(self._task, completed=record.step, description=line)
        else:
            self.console.print(line, highlight=False)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


class TensorBoardSink:
    """Scalars to TensorBoard when ``torch.utils.tensorboard`` can be imported; else inert."""

    def __init__(self, log_dir: Path, enabled: bool) -> None:
        self.writer: Any = None
        if enabled and importlib.util.find_spec("tensorboard") is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(log_dir))

    @property
    def active(self) -> bool:
        return self.writer is not None

    def write(self, record: UpdateMetrics) -> None:
        if self.writer is None:
            return
        for name, value in vars(record).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.writer.add_scalar(name, value, record.step)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
