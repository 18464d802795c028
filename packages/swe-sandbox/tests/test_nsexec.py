"""The namespace init as command server: one fork + exec per command, nothing leaks to it.

The security properties themselves (uid, capabilities, timeouts, limits, `/grader`, janitor)
are exercised on both backends by ``test_security.py`` / ``test_limits.py`` / ``test_janitor.py``;
these tests pin down what is specific to commands being spawned by the sandbox's own init.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import Limits, NamespaceBackend, SandboxClosedError
from swe_sandbox._namespace import NamespaceSession
from swe_sandbox._nsexec import _Status

LIMIT = 1 << 16


@pytest.fixture
def session(namespace_backend: NamespaceBackend) -> Iterator[NamespaceSession]:
    started = namespace_backend.start(f"nsexec-{os.getpid()}-{time.monotonic_ns()}", Limits())
    try:
        yield started
    finally:
        started.close()


def run(session: NamespaceSession, command: str, **kwargs: object) -> tuple[int, str]:
    result = session.exec(command, timeout=20, output_limit=LIMIT, **kwargs)  # type: ignore[arg-type]
    return result.exit_code, result.output


def test_commands_are_children_of_the_init_and_inherit_no_descriptor(
    session: NamespaceSession,
) -> None:
    code, output = run(session, 'echo "$PPID $$"; ls /proc/self/fd; readlink /proc/self/fd/0')
    assert code == 0
    lines = output.split()
    assert lines[0] == "1"  # spawned by the sandbox's init, not entered from outside
    # 0, 1, 2 and the directory ls itself opened: no status pipe, socket or other command's fd
    assert lines[2:-1] == ["0", "1", "2", "3"], output
    assert lines[-1] == "/dev/null"


def test_each_command_gets_its_own_process_group(session: NamespaceSession) -> None:
    code, output = run(session, "ps -o pgid= -p $$; echo $$")
    pgid, pid = output.split()
    assert code == 0
    assert pgid == pid


def test_the_agent_cannot_signal_or_inspect_the_init(session: NamespaceSession) -> None:
    code, output = run(session, "kill -9 1; ls /proc/1/fd")
    assert code != 0
    assert "Operation not permitted" in output or "Permission denied" in output, output
    assert run(session, "echo alive") == (0, "alive\n")


def test_exit_codes_and_signals_map_like_a_shell(session: NamespaceSession) -> None:
    assert run(session, "exit 3")[0] == 3
    assert run(session, "kill -TERM $$")[0] == 128 + signal.SIGTERM


def test_a_command_near_execves_argument_limit_runs_intact(session: NamespaceSession) -> None:
    payload = "x" * 120_000
    code, output = run(session, f"printf %s {payload} | wc -c")
    assert (code, output.strip()) == (0, "120000")


def test_environment_is_exactly_the_requested_one(session: NamespaceSession) -> None:
    code, output = run(session, "echo $PATH-$SWE_PROBE-$USER", env={"SWE_PROBE": "p"})
    assert code == 0
    assert output.strip() == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin-p-"


def test_concurrent_commands_keep_their_own_output_stdin_and_exit_code(
    session: NamespaceSession,
) -> None:
    def one(i: int) -> tuple[int, str]:
        return run(session, f"sleep 0.0{i % 5}; cat; exit {i % 7}", stdin=f"in-{i}".encode())

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(40)))
    assert results == [(i % 7, f"in-{i}") for i in range(40)]


def test_a_dead_init_is_reported_as_closed(session: NamespaceSession) -> None:
    os.kill(session._init_pid, signal.SIGKILL)
    session._init.wait(timeout=10)
    with pytest.raises(SandboxClosedError):
        run(session, "true")


@given(
    pid=st.integers(1, 4_000_000),
    code=st.integers(-64, 255),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_status_lines_parse_however_the_pipe_splits_them(
    pid: int, code: int, cuts: list[int]
) -> None:
    text = f"pid {pid}\nexit {code}\n".encode()
    read_end, write_end = os.pipe()
    status = _Status(read_end)
    try:
        edges = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
        for start, stop in itertools.pairwise(edges):
            os.write(write_end, text[start:stop])
            status.read()
        os.close(write_end)
        write_end = -1
        status.read()
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    assert (status.pid, status.code, status.eof) == (pid, code, True)
