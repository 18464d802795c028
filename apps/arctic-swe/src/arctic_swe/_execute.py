"""How every ``arctic-swe`` command ends: its exit code, one line on an error, one line on an
interrupt.

* The exit codes are those of every Arctic-SWE command line: 0 success, 2 a usage error (bad
  arguments, a missing or invalid input path or config file the user named, a typed validation
  error of the app), 1 a runtime failure (something failed while doing the work: an engine or
  the trainer died, a sandbox could not run). Both print ``arctic-swe: error: ...`` on one line
  to stderr; an unexpected exception still shows its traceback, because that is a bug to
  report.
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

#: The program name every error line starts with (``PROG: error: ...``, as argparse writes).
PROG = "arctic-swe"

#: Exit code of a usage error (argparse's own usage errors use the same).
USAGE_EXIT = 2

#: Exit code of a runtime failure: the input was fine, the work failed.
FAILURE_EXIT = 1

#: ``OSError`` subclasses that mean "the path the user named is wrong", a usage error; any other
#: ``OSError`` (a full disk, a refused connection) is a runtime failure.
_PATH_ERRORS = (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError)


class CommandError(Exception):
    """Bad input to a command: printed as ``arctic-swe: error: <message>`` on one line, exit 2."""


class CommandFailedError(Exception):
    """The work of a command failed (not its input): one ``arctic-swe: error:`` line, exit 1."""


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


@contextmanager
def runtime_errors(*types: type[BaseException]) -> Iterator[None]:
    """Turn the listed exception types (failures while doing the work) into
    :class:`CommandFailedError`."""
    try:
        yield
    except types as exc:
        raise CommandFailedError(str(exc)) from exc


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
    except CommandFailedError as exc:
        return error(str(exc), code=FAILURE_EXIT)
    except _PATH_ERRORS as exc:  # a missing input, a file where a directory belongs: name it
        return error(_os_message(exc))
    except OSError as exc:  # the machine failed the work (disk full, connection refused)
        return error(_os_message(exc), code=FAILURE_EXIT)
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


def error(message: str, *, code: int = USAGE_EXIT) -> int:
    """Print ``arctic-swe: error: message`` as one unwrapped line on stderr; return ``code``
    (the usage exit code unless told otherwise)."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def _interrupted(signals: _Signals, line: str) -> int:
    # A second Ctrl-C while the line is printed must not turn into a traceback.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(line, file=sys.stderr, flush=True)
    return 128 + int(signals.received)


def _os_message(exc: OSError) -> str:
    what = exc.strerror or str(exc)
    return f"{what}: {exc.filename}" if exc.filename else what
