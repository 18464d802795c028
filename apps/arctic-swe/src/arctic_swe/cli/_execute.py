"""How every ``arctic-swe`` command ends: its exit code, one line on bad input, one line on an
interrupt.

* Bad input (a typed error of the app, a missing or unwritable file) prints ``error: ...`` on
  one line to stderr and exits 2; an unexpected exception still shows its traceback, because
  that is a bug to report.
* SIGINT and SIGTERM take the same path: SIGTERM (what schedulers send) is turned into the
  interrupt the running code already handles, so ``finally`` blocks and ``async with`` exits
  tear sandboxes and engines down. The command may re-raise it as :class:`CommandInterruptedError` to say
  where it stopped and how to resume; the process prints ``interrupted ...`` and exits 130
  (SIGINT) or 143 (SIGTERM), the shell's 128 + signal number.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

#: Exit code of a bad-input error (argparse's usage errors use the same).
USAGE_EXIT = 2


class CommandError(Exception):
    """Bad input to a command: printed as ``error: <message>`` on one line, exit 2."""


class CommandInterruptedError(Exception):
    """Raised by a command that caught the interrupt; the message says where it stopped and
    how to resume, e.g. ``at update 7; resume with: arctic-swe overfit --resume ...``."""


@contextmanager
def user_errors(*types: type[BaseException]) -> Iterator[None]:
    """Turn the listed exception types (the app's typed input errors) into :class:`CommandError`."""
    try:
        yield
    except types as exc:
        raise CommandError(str(exc)) from exc


class _Signals:
    """Which signal stopped the command, with SIGTERM routed into the SIGINT handler."""

    def __init__(self) -> None:
        self.received = signal.SIGINT

    def on_term(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.SIGTERM
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # default_int_handler, or asyncio.run's task-cancelling one
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt


def execute(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one command under the interrupt and bad-input policy; return the exit code."""
    signals = _Signals()
    in_main = threading.current_thread() is threading.main_thread()  # signal.signal's rule
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    if in_main:
        signal.signal(signal.SIGTERM, signals.on_term)
    try:
        return run(args)
    except CommandInterruptedError as exc:
        return _interrupted(signals, f"interrupted {exc}")
    except KeyboardInterrupt:
        return _interrupted(signals, "interrupted")
    except CommandError as exc:
        return error(str(exc))
    except OSError as exc:  # missing input, unwritable output: name the file
        return error(_os_message(exc))
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


def error(message: str) -> int:
    """Print ``error: message`` as one unwrapped line on stderr; return the usage exit code."""
    print(f"error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return USAGE_EXIT


def _interrupted(signals: _Signals, line: str) -> int:
    # A second Ctrl-C while the line is printed must not turn into a traceback.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(line, file=sys.stderr, flush=True)
    return 128 + int(signals.received)


def _os_message(exc: OSError) -> str:
    what = exc.strerror or str(exc)
    return f"{what}: {exc.filename}" if exc.filename else what
