"""The command line's one ``rich`` progress layout: a bar per stage with a live info field."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def stage_progress(console: Console) -> Progress:
    """Bars of ``description``, done/total, the task's ``info`` field and the elapsed time; add
    tasks with ``info=""`` and update ``info`` as the stage moves."""
    return Progress(
        TextColumn("{task.description:<6}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
    )
