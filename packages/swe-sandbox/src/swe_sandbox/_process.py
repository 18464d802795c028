"""Run a host process with a deadline, optional stdin, and bounded output capture."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from swe_sandbox._output import BoundedOutput
from swe_sandbox._results import ExecResult

#: After the command itself exits, keep reading this long for output still in flight; a
#: background child that holds the pipe open must not stall the tool call.
DRAIN_GRACE_S = 0.05


def _feed_stdin(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.write(data)
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.close()


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    output_limit: int,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    on_timeout: Callable[[int], None] | None = None,
) -> ExecResult:
    """Run `argv` in its own session; on timeout SIGKILL its whole process group.

    stdout and stderr are merged and captured through `BoundedOutput`, so memory stays bounded.
    `on_timeout(pgid)` runs after the group kill (backends use it to kill escaped processes).
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    writer = None
    if stdin is not None:
        writer = threading.Thread(target=_feed_stdin, args=(proc, stdin), daemon=True)
        writer.start()
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    sink = BoundedOutput(output_limit)
    deadline = started + timeout
    timed_out = False
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_GRACE_S:
                break
            if exited_at is None and now >= deadline:
                timed_out = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                if on_timeout is not None:
                    on_timeout(proc.pid)
                proc.wait()
                break
            wait = min(0.05 if exited_at is not None else 0.5, max(0.0, deadline - now))
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    proc.wait()
                    break
                sink.feed(chunk)
    finally:
        proc.stdout.close()
        if writer is not None:
            writer.join(timeout=1.0)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    code = proc.returncode
    return ExecResult(
        exit_code=137 if timed_out else (128 - code if code < 0 else code),
        output=sink.text(),
        timed_out=timed_out,
        truncated=sink.truncated,
        output_bytes=sink.total,
        duration_s=time.monotonic() - started,
    )
