"""Where command output goes: ``rich`` styling and live progress on a terminal only; piped
output is never wrapped, so machine-readable lines stay one line each."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from arctic_swe.harness import Trajectory


def console(*, stderr: bool = False) -> Console:
    """A ``rich`` console on stdout (or stderr) that soft-wraps when not on a terminal."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, soft_wrap=True)


def print_json_line(value: Any) -> None:
    """One JSON object on one stdout line, whatever the terminal width (never through rich)."""
    print(json.dumps(value), flush=True)


def solved_counter(progress: Progress, bar: TaskID) -> Callable[[Trajectory], None]:
    """An ``on_done`` callback that advances ``bar`` and shows the running count solved."""
    solved = 0

    def done(trajectory: Trajectory) -> None:
        nonlocal solved
        solved += trajectory.solved
        progress.update(bar, advance=1, info=f"solved {solved}")

    return done


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail before any work when ``path`` cannot be written (its directory is missing or
    read-only): a run must not end, minutes later, unable to save its result."""
    from arctic_swe._execute import CommandError

    directory = Path(path).resolve().parent
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            pass
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
