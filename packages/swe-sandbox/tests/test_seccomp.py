"""`_seccomp`: the namespace sandbox's filter — keyring, ptrace, mounts and namespaces denied."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from swe_sandbox import NamespaceBackend, Sandbox, TaskSpec
from swe_sandbox._seccomp import RET_ALLOW, filter_program

SYSCALL = (
    'python3 -c "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); '
    'r = libc.syscall(*map(int, sys.argv[1:])); print(r, ctypes.get_errno())" '
)


def test_program_is_well_formed() -> None:
    program = filter_program("x86_64")
    assert program is not None
    assert filter_program("aarch64") is None
    entries = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    for index, (code, jt, jf, _) in enumerate(entries):
        if code & 0x07 == 0x05:  # jumps stay inside the program
            assert index + 1 + max(jt, jf) < len(entries)
    assert entries[-1][0] == 0x06  # ends in a return (the deny)
    assert (0x06, 0, 0, RET_ALLOW) in entries


@pytest.fixture(scope="module")
def sandbox(namespace_backend: NamespaceBackend, toy_task: TaskSpec) -> Iterator[Sandbox]:
    with Sandbox.create(toy_task, namespace_backend) as box:
        yield box


@pytest.mark.parametrize("user", ["agent", "root"])
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("keyctl(GET_KEYRING_ID, user keyring)", "250 0 -4 0"),
        ("add_key", "248 0 0 0 0 0"),
        ("request_key", "249 0 0 0 0"),
        ("ptrace(TRACEME)", "101 0 0 0 0"),
        ("unshare(CLONE_NEWUSER)", "272 268435456"),
        ("setns", "308 0 0"),
        ("mount", "165 0 0 0 0 0"),
        ("pivot_root", "155 0 0"),
    ],
)
def test_denied_syscalls_fail_with_eperm(sandbox: Sandbox, user: str, name: str, args: str) -> None:
    done = sandbox.run(SYSCALL + args, user=user)  # type: ignore[arg-type]
    assert done.ok, done.output
    assert done.output.split() == ["-1", "1"], (name, done.output)  # EPERM


def test_ordinary_work_still_runs(sandbox: Sandbox) -> None:
    script = (
        "python3 -c 'import threading; t = threading.Thread(target=print); t.start(); t.join()'"
        " && (sleep 0 & wait) && unshare -U true 2>/dev/null; echo unshare=$?"
    )
    done = sandbox.execute_bash(script)
    assert done.ok, done.output
    assert "unshare=1" in done.output  # the CLI fails too (clone/unshare denied)


def test_filter_can_be_turned_off(rootfs: object, toy_task: TaskSpec) -> None:
    backend = NamespaceBackend(rootfs=rootfs, seccomp=False)  # type: ignore[arg-type]
    with Sandbox.create(toy_task, backend) as box:
        done = box.run(SYSCALL + "250 0 -4 0")
        assert done.output.split()[1] != "1", done.output
