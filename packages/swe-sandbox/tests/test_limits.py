"""Resource abuse is contained, long commands are killed, the sandbox is reaped (both backends).

Also: 10 MB of output is truncated without being buffered, and copy in/out refuses traversal and
symlinks.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sandbox_testkit.leaks import leftovers, processes_with

from swe_sandbox import Backend, Limits, PathEscapeError, Sandbox, TaskSpec

SMALL = Limits(
    memory_bytes=256 << 20,
    pids=64,
    disk_bytes=64 << 20,
    tmp_bytes=32 << 20,
    output_limit_bytes=8 << 10,
    exec_timeout_s=30,
)


@pytest.fixture(scope="module")
def small(backend: Backend, toy_task: TaskSpec) -> Iterator[Sandbox]:
    with Sandbox.create(toy_task, backend, SMALL) as sandbox:
        yield sandbox


def assert_alive(sandbox: Sandbox) -> None:
    assert sandbox.execute_bash("echo alive").output.strip() == "alive"


def test_fork_bomb_is_contained_and_reaped(backend: Backend, toy_task: TaskSpec) -> None:
    marker = "bomb86391"
    with Sandbox.create(toy_task, backend, SMALL) as sandbox:
        sandbox_id = sandbox._live().sandbox_id
        bomb = f"{marker}(){{ {marker}|{marker}& }}; {marker}; sleep 5"
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(sandbox.execute_bash, bomb, 4)
            peak = 0
            while not running.done():  # sample while it rages: it must stay capped
                peak = max(peak, len(processes_with(marker)))
                time.sleep(0.05)
            result = running.result()
        assert result.timed_out
        assert 0 < peak <= SMALL.pids
        assert len(processes_with("")) < 5000  # the host is fine
    deadline = time.monotonic() + 15
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []
    assert leftovers(backend, sandbox_id) == []


PIDS_PROBE = """
import os, signal, time
children = []
try:
    while len(children) < 1000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
except OSError as exc:
    print("capped", len(children), exc.errno)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


def test_pids_limit_holds(small: Sandbox) -> None:
    small.write_file("pids_probe.py", PIDS_PROBE.encode())
    result = small.execute_bash("python3 pids_probe.py", timeout=60)
    words = result.output.split()
    assert words[0] == "capped", result.output
    assert int(words[1]) < SMALL.pids
    assert_alive(small)


def test_memory_balloon_is_killed(small: Sandbox) -> None:
    result = small.execute_bash(
        "python3 -c \"b = bytearray(600 << 20); print('survived')\"", timeout=60
    )
    assert not result.ok
    assert "survived" not in result.output
    assert_alive(small)


def test_disk_fill_is_capped(small: Sandbox) -> None:
    for directory in ("/work", "/tmp"):
        result = small.execute_bash(
            f"dd if=/dev/zero of={directory}/fill bs=1M count=200 2>&1; "
            f"du -sm {directory}/fill | cut -f1",
            timeout=60,
        )
        assert "No space left" in result.output, result.output
        assert int(result.output.split()[-1]) <= SMALL.disk_bytes >> 20
        assert small.execute_bash(f"rm -f {directory}/fill").ok
    assert_alive(small)


def test_root_filesystem_is_read_only(small: Sandbox) -> None:
    for path in ("/usr/bin/evil", "/etc/evil", "/evil", "/home/evil"):
        assert not small.execute_bash(f"touch {path}").ok, path
    assert small.execute_bash("id -u").output.strip() == "1000"
    assert small.execute_bash("id -G").output.strip() == "1000"
    caps = small.execute_bash("grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status").output
    assert [line.split()[1] for line in caps.splitlines()] == ["0000000000000000"] * 4
    assert not small.execute_bash("su -c true root </dev/null").ok


def test_sleep_infinity_is_killed_and_background_processes_are_reaped(
    backend: Backend, toy_task: TaskSpec
) -> None:
    marker = "86397"
    with Sandbox.create(toy_task, backend, SMALL) as sandbox:
        started = time.monotonic()
        result = sandbox.execute_bash("sleep infinity", timeout=2)
        assert result.timed_out
        assert result.exit_code == 137
        assert time.monotonic() - started < 15
        background = sandbox.execute_bash(
            f"setsid sleep {marker} >/dev/null 2>&1 & sleep {marker}1 & echo started", timeout=20
        )
        assert background.output.strip() == "started"
        assert background.duration_s < 5  # a background child holding the pipe does not stall us
        assert processes_with(f"sleep {marker}")
        sandbox_id = sandbox._live().sandbox_id
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []
    assert leftovers(backend, sandbox_id) == []


def test_ten_megabytes_of_output_are_truncated_not_buffered(small: Sandbox) -> None:
    tracemalloc.start()
    try:
        result = small.execute_bash("head -c 10000000 /dev/zero | tr '\\0' x", timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok
    assert result.truncated
    assert result.output_bytes == 10_000_000
    assert len(result.output) < SMALL.output_limit_bytes + 200
    assert "output truncated" in result.output
    assert peak < 4 << 20, f"peak traced allocation {peak} bytes"


def test_copy_in_refuses_symlinks_and_traversal(small: Sandbox, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ok.txt").write_text("fine\n")
    small.copy_in(tree, "incoming")
    assert small.read_file("incoming/ok.txt") == b"fine\n"
    (tree / "link").symlink_to("/etc/passwd")
    with pytest.raises(PathEscapeError):
        small.copy_in(tree, "incoming2")
    assert not small.execute_bash("test -e incoming2").ok  # nothing was written
    with pytest.raises(PathEscapeError):
        small.copy_in(tree / "ok.txt", "../../etc")
    with pytest.raises(PathEscapeError):
        small.copy_in(tree / "link", "x")


def test_copy_out_and_tools_refuse_symlinks_and_traversal(small: Sandbox, tmp_path: Path) -> None:
    assert small.execute_bash(
        "mkdir -p out && echo data > out/a.txt && ln -sf /etc/passwd leak && "
        "mkdir -p trap && ln -sf /etc trap/etc && ln -sfn /etc etcdir"
    ).ok
    copied = small.copy_out("out", tmp_path / "good")
    assert (copied / "out" / "a.txt").read_text() == "data\n"
    for path in ("leak", "trap", "../etc/passwd", "/etc/passwd", "etcdir/passwd"):
        with pytest.raises(PathEscapeError):
            small.copy_out(path, tmp_path / "bad")
    for path in ("leak", "../etc/passwd", "/etc/passwd", "etcdir/passwd"):
        with pytest.raises(PathEscapeError):
            small.read_file(path)
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").rglob("*"))
    with pytest.raises(PathEscapeError):
        small.edit_via_str_replace("leak", "root", "toor")
    with pytest.raises(PathEscapeError):
        small.edit_via_str_replace("etcdir/passwd", "root", "toor")
    with pytest.raises(PathEscapeError):
        small.write_file("etcdir/evil", b"x")
