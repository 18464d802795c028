"""The command line's one ``rich`` progress layout: a bar per stage with a live info field."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def stage_progress(console: Console) -> Progress:
    """Bars of ``description``, done/total, the task's ``info`` field, the elapsed time and the
    estimated time remaining; add tasks with ``info=""`` and update ``info`` as the stage moves.

    Shown on a terminal only: piped or redirected output gets no bar (not even the final one
    ``rich`` would otherwise print), so logs and machine-readable output stay clean.
    """
    return Progress(
        TextColumn("{task.description:<6}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
    )
