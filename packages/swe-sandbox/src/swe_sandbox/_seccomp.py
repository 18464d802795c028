"""The namespace backend's seccomp filter, built here as a classic BPF program (Arctic-SWE §5).

Installed by the sandbox init (after it joined a fresh anonymous session keyring, with
``no_new_privs``) and inherited by every command, agent or harness. Denied with ``EPERM``:

* the kernel keyring: ``add_key``, ``request_key``, ``keyctl`` (the per-uid user keyring is
  shared with the host otherwise);
* tracing other processes: ``ptrace``, ``process_vm_readv`` / ``process_vm_writev``, ``kcmp``;
* new mounts and namespaces: ``mount``, ``umount2``, ``pivot_root``, the new mount API
  (``open_tree`` … ``mount_setattr``), ``unshare``, ``setns``, and ``clone`` with any
  ``CLONE_NEW*`` flag (an unprivileged user namespace would hand the agent mount rights);
* every syscall of a foreign ABI (i386, x32), which would bypass the numbers checked here.

``clone3`` returns ``ENOSYS`` (its flags live in memory a filter cannot read), so the C
library falls back to ``clone``, whose flags are checked — the usual container practice.
Only x86-64 is supported; elsewhere `filter_program` returns ``None`` and the backend says so.
"""

from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
#: x86-64 syscall numbers denied outright.
DENIED_X86_64 = {
    "ptrace": 101,
    "pivot_root": 155,
    "mount": 165,
    "umount2": 166,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}
CLONE_X86_64 = 56
CLONE3_X86_64 = 435
KEYCTL_X86_64 = 250
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME.
CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
CLONE_NEW_MASK |= 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian)


def _assemble(
    program: list[tuple[int, int | str, int | str, int]], labels: dict[str, int]
) -> bytes:
    """Resolve label jumps to relative offsets and pack ``struct sock_filter`` entries."""
    out = b""
    for index, (code, jt, jf, k) in enumerate(program):
        jt_n = labels[jt] - index - 1 if isinstance(jt, str) else jt
        jf_n = labels[jf] - index - 1 if isinstance(jf, str) else jf
        out += struct.pack("<HBBI", code, jt_n, jf_n, k)
    return out


def filter_program(machine: str | None = None) -> bytes | None:
    """The packed ``struct sock_filter`` array for this machine, or ``None`` if unsupported."""
    if (machine or platform.machine()) != "x86_64":
        return None
    program: list[tuple[int, int | str, int | str, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "deny", AUDIT_ARCH_X86_64),
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE_K, "deny", 0, _X32_BIT),
    ]
    program += [(_JEQ_K, "deny", 0, nr) for nr in sorted(DENIED_X86_64.values())]
    program += [
        (_JEQ_K, 0, 1, CLONE3_X86_64),
        (_RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),
        (_JEQ_K, "clone", 0, CLONE_X86_64),
        (_RET_K, 0, 0, RET_ALLOW),
    ]
    labels = {"clone": len(program)}
    program += [
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, "deny", 0, CLONE_NEW_MASK),
        (_RET_K, 0, 0, RET_ALLOW),
    ]
    labels["deny"] = len(program)
    program.append((_RET_K, 0, 0, RET_ERRNO | errno.EPERM))
    return _assemble(program, labels)


#: Runs in the init (``python3 -I -S``) before it says ready: own keyring, then the filter.
INSTALL_SOURCE = r"""
def install_filter(hex_program, keyctl_nr):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    # A fresh anonymous session keyring (KEYCTL_JOIN_SESSION_KEYRING, name NULL).
    if libc.syscall(keyctl_nr, 1, None) < 0:
        raise OSError(ctypes.get_errno(), "keyctl(JOIN_SESSION_KEYRING)")
    program = bytes.fromhex(hex_program)
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    prog = Prog(len(program) // 8, program)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(SET_SECCOMP)")
"""
