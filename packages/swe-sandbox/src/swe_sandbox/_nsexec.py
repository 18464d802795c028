"""The namespace sandbox's command server (its init) and the owner-side client.

Why: entering a sandbox from outside costs three process starts per command (a shell joining
the cgroups, ``nsenter`` entering the namespaces and dropping privileges, ``bash``), ~5x the
raw ``nsenter … true`` floor (the target: an exec round trip within 1.5x raw). The init is already
inside every namespace, the chroot and the cgroups, so it spawns commands itself: one
``fork`` + ``exec bash -c`` per command.

Protocol. The owner holds one end of a ``SOCK_SEQPACKET`` socketpair; the init holds the other
(nothing else in the sandbox can reach it: every descriptor the init holds is close-on-exec).
A request is one message — JSON ``{"command", "user", "env"}`` — carrying three descriptors:
the command's stdin, its merged stdout/stderr, and a *status* pipe. The init forks; the child
starts a new session (its own process group), takes the two stdio descriptors, drops to the
agent uid/gid (or the test run's, agent + 1, for ``"tester"``) with no supplementary groups
unless ``user == "root"`` (a full uid change from
root clears every capability; every mount is ``nosuid``, so none can come back) and execs
``bash -c``. The init writes ``pid <pid>`` to the status pipe, and ``exit <code>`` once it
reaps the child (``code`` as ``os.waitstatus_to_exitcode``). ``{"kill": pid}`` SIGKILLs a
command's process group. The init also reaps every orphan, and exits — taking the whole PID
namespace with it — when either the keepalive pipe (its stdin) or the socket closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
import time
from collections.abc import Callable

from swe_sandbox._errors import SandboxClosedError, SandboxError
from swe_sandbox._output import BoundedOutput
from swe_sandbox._results import ExecResult

#: Largest request (command + environment). execve refuses a single argument over 128 KiB
#: anyway; the socket buffer is raised to this so any command execve would accept fits.
MAX_REQUEST_BYTES = 4 << 20
#: After the command itself exits, keep reading this long for output still in flight; a
#: background child that holds the pipe open must not stall the tool call.
DRAIN_GRACE_S = 0.05
#: Linux ``SO_SNDBUFFORCE`` (not exported by the ``socket`` module).
_SO_SNDBUFFORCE = 32
#: After a timeout kill, how long to wait for the init to report the reaped command.
KILL_REPORT_S = 10.0

#: Runs inside the sandbox as its PID 1 (``python3 -I -S -c SERVER_SOURCE ctl_fd host_pid uid
#: buf [filter_hex keyctl_nr install_source]``): with a filter it joins its own keyring and
#: installs the seccomp filter (`swe_sandbox._seccomp`) before it says ready.
SERVER_SOURCE = r"""
import json, os, select, signal, socket, sys
os.set_inheritable(int(sys.argv[1]), False)
CTL = socket.socket(fileno=int(sys.argv[1]))
AGENT = int(sys.argv[3])
BUF = int(sys.argv[4])
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False); os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
signal.signal(signal.SIGCHLD, lambda *_: None)
os.chdir("/work")
if len(sys.argv) > 6 and sys.argv[5]:
    exec(sys.argv[7])
    install_filter(sys.argv[5], int(sys.argv[6]))
os.write(1, b"ready %s\n" % sys.argv[2].encode())
null = os.open("/dev/null", os.O_RDWR)
os.dup2(null, 1); os.dup2(null, 2); os.close(null)
status_fds = {}
def say(fd, text):
    try: os.write(fd, text.encode())
    except OSError: pass
def reap():
    while True:
        try: pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError: return
        if pid == 0: return
        fd = status_fds.pop(pid, None)
        if fd is not None:
            say(fd, "exit %d\n" % os.waitstatus_to_exitcode(status)); os.close(fd)
def child(request, stdin, out):
    try:
        os.setsid()
        os.dup2(stdin, 0); os.dup2(out, 1); os.dup2(out, 2)
        if request["user"] in ("agent", "tester"):
            uid = AGENT if request["user"] == "agent" else AGENT + 1
            os.setgroups([]); os.setgid(uid); os.setuid(uid)
        os.execve("/bin/bash", ["bash", "-c", request["command"]], request["env"])
    except BaseException as exc:
        say(2, "swe-sandbox: cannot run the command: %s\n" % exc)
    os._exit(127)
def spawn(request, fds):
    stdin, out, status = fds
    try:
        pid = os.fork()
    except OSError as exc:
        say(out, "swe-sandbox: cannot start the command: %s\n" % exc)
        say(status, "exit 126\n")
        for fd in fds: os.close(fd)
        return
    if pid == 0:
        child(request, stdin, out)
    os.close(stdin); os.close(out)
    say(status, "pid %d\n" % pid)
    status_fds[pid] = status
def handle(data, fds):
    try: request = json.loads(data)
    except ValueError: request = {}
    if "kill" in request:
        try: os.killpg(int(request["kill"]), signal.SIGKILL)
        except (OSError, ValueError, TypeError): pass
    elif len(fds) == 3:
        spawn(request, fds); return
    for fd in fds: os.close(fd)
while True:
    try:
        ready = select.select([CTL, 0, wake_r], [], [])[0]
    except InterruptedError:
        continue
    if wake_r in ready:
        try: os.read(wake_r, 4096)
        except BlockingIOError: pass
    reap()
    if 0 in ready and not os.read(0, 4096):
        break
    if CTL in ready:
        data, fds, _, _ = socket.recv_fds(CTL, BUF, 3)
        for fd in fds:  # recv_fds ignores MSG_CMSG_CLOEXEC on older Pythons: no leak to commands
            os.set_inheritable(fd, False)
        if not data:
            break
        handle(data, fds)
"""


def control_pair() -> tuple[socket.socket, socket.socket]:
    """``(owner_end, init_end)``; the owner end can send any request execve would accept."""
    owner, init = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for sock in (owner, init):
        try:  # root (which this backend needs) may exceed net.core.wmem_max
            sock.setsockopt(socket.SOL_SOCKET, _SO_SNDBUFFORCE, MAX_REQUEST_BYTES)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_REQUEST_BYTES)
    return owner, init


def _feed(fd: int, data: bytes) -> None:
    try:
        with contextlib.suppress(OSError):  # the command may exit without reading it all
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class _Status:
    """The status pipe's lines: ``pid N`` then ``exit CODE``."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid: int | None = None
        self.code: int | None = None
        self.eof = False
        self._pending = b""

    def read(self) -> None:
        chunk = os.read(self.fd, 256)
        self.eof = not chunk
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for word, _, value in (line.decode().partition(" ") for line in lines):
            if word == "pid":
                self.pid = int(value)
            elif word == "exit":
                self.code = int(value)


def send_request(ctl: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    data = json.dumps(request).encode()
    if len(data) > MAX_REQUEST_BYTES - 64:
        raise SandboxError(f"command and environment too large ({len(data)} bytes)")
    try:
        socket.send_fds(ctl, [data], fds)
    except OSError as exc:  # EPIPE / ECONNRESET: init gone; EBADF: session closed meanwhile
        raise SandboxClosedError(f"the sandbox init is gone: {exc}") from exc


def run_via_init(
    ctl: socket.socket,
    command: str,
    *,
    user: str,
    env: dict[str, str],
    timeout: float,
    output_limit: int,
    stdin: bytes | None,
    on_timeout: Callable[[], None],
) -> ExecResult:
    """Run `command` through the sandbox init (see the module docstring).

    Same contract as ``run_bounded``: merged output through `BoundedOutput` (bounded memory),
    on timeout the command's process group is killed, then `on_timeout` (everything escaped),
    and the result says ``timed_out`` with exit code 137.
    """
    started = time.monotonic()
    out_r, out_w = os.pipe()
    status_r, status_w = os.pipe()
    feed_w: int | None = None
    if stdin is None:
        in_r = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    else:
        in_r, feed_w = os.pipe()
    try:
        send_request(ctl, {"command": command, "user": user, "env": env}, [in_r, out_w, status_w])
    except BaseException:
        for fd in (out_r, status_r, feed_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, status_w):
            os.close(fd)
    writer = None
    if feed_w is not None:
        assert stdin is not None
        writer = threading.Thread(target=_feed, args=(feed_w, stdin), daemon=True)
        writer.start()
    try:
        sink, status, timed_out = _collect(
            ctl, out_r, _Status(status_r), started + timeout, output_limit, on_timeout
        )
    finally:
        os.close(out_r)
        os.close(status_r)
        if writer is not None:
            writer.join(timeout=1.0)
    if status.code is None and not timed_out:
        raise SandboxClosedError("the sandbox init exited while a command ran")
    code = status.code if status.code is not None else -9
    return ExecResult(
        exit_code=137 if timed_out else (128 - code if code < 0 else code),
        output=sink.text(),
        timed_out=timed_out,
        truncated=sink.truncated,
        output_bytes=sink.total,
        duration_s=time.monotonic() - started,
    )


def _collect(
    ctl: socket.socket,
    out_fd: int,
    status: _Status,
    deadline: float,
    output_limit: int,
    on_timeout: Callable[[], None],
) -> tuple[BoundedOutput, _Status, bool]:
    sink = BoundedOutput(output_limit)
    exited_at: float | None = None
    out_open = True
    while True:
        now = time.monotonic()
        done = status.code is not None or status.eof
        if done and exited_at is None:
            exited_at = now
        if exited_at is not None and (now - exited_at > DRAIN_GRACE_S or not out_open):
            return sink, status, False
        if exited_at is None and now >= deadline:
            _kill(ctl, status, on_timeout)
            return sink, status, True
        wait = min(0.05 if exited_at is not None else 0.5, max(0.0, deadline - now))
        watched = [fd for fd, on in ((out_fd, out_open), (status.fd, not done)) if on]
        ready, _, _ = select.select(watched, [], [], wait)
        if out_fd in ready:
            chunk = os.read(out_fd, 1 << 16)
            out_open = bool(chunk)
            sink.feed(chunk)
        if status.fd in ready:
            status.read()


def _kill(ctl: socket.socket, status: _Status, on_timeout: Callable[[], None]) -> None:
    """Process group first, then whatever escaped it; then wait for the init's report."""
    if status.pid is None:  # the pid line is written right after fork: it is there or coming
        ready, _, _ = select.select([status.fd], [], [], 1.0)
        if ready:
            status.read()
    if status.pid is not None:
        with contextlib.suppress(SandboxError):
            send_request(ctl, {"kill": status.pid}, [])
    on_timeout()
    give_up = time.monotonic() + KILL_REPORT_S
    while status.code is None and not status.eof and time.monotonic() < give_up:
        ready, _, _ = select.select([status.fd], [], [], 0.2)
        if ready:
            status.read()
