"""Scripts run *inside* the sandbox (as the agent uid) to read, write and pack files safely.

Every path is resolved inside the sandbox with ``realpath`` and must stay under the workdir;
files are opened with ``O_NOFOLLOW``, so a symlink planted by the agent is refused rather than
followed. Binary data crosses the exec boundary as base64 (stdout) or a tar stream (stdin).
"""

from __future__ import annotations

import shlex

from swe_sandbox._backend import WORKDIR

#: Exit status the helper uses for "path escapes the workdir or is a symlink".
ESCAPE_EXIT = 93
#: Exit status for "no such file".
MISSING_EXIT = 94

HELPER_SOURCE = r"""
import base64, io, json, os, sys, tarfile
W = sys.argv[1]; OP = sys.argv[2]; ARGS = sys.argv[3:]
def die(code, msg):
    sys.stderr.write(msg + "\n"); sys.exit(code)
def inside(path):
    p = os.path.normpath(path if path.startswith("/") else os.path.join(W, path))
    real = os.path.realpath(os.path.dirname(p))
    if real != W and not real.startswith(W + "/"):
        die(ESCAPE, "path %r resolves outside %s" % (path, W))
    full = os.path.join(real, os.path.basename(p))
    if os.path.islink(full):
        die(ESCAPE, "path %r is a symlink: refused" % path)
    if full != W and not full.startswith(W + "/"):
        die(ESCAPE, "path %r is outside %s" % (path, W))
    return full
def read(path):
    full = inside(path)
    if os.path.isdir(full):
        die(MISSING, "is a directory: %s" % path)
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        die(MISSING, "no such file: %s" % path)
    except IsADirectoryError:
        die(MISSING, "is a directory: %s" % path)
    with os.fdopen(fd, "rb") as f:
        sys.stdout.write(base64.b64encode(f.read()).decode())
def put(delete_json):
    for path in json.loads(delete_json):
        full = inside(path)
        if os.path.isdir(full) and not os.path.islink(full):
            import shutil; shutil.rmtree(full)
        elif os.path.lexists(full):
            os.unlink(full)
    with tarfile.open(fileobj=io.BytesIO(sys.stdin.buffer.read())) as tar:
        for m in tar.getmembers():
            if not (m.isfile() or m.isdir()):
                die(ESCAPE, "tar member %r is not a regular file or directory" % m.name)
            full = inside(m.name)
            if m.isdir():
                os.makedirs(full, exist_ok=True); continue
            os.makedirs(os.path.dirname(full), exist_ok=True)
            full = inside(m.name)
            if os.path.lexists(full):
                os.unlink(full)
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, m.mode & 0o777 or 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(tar.extractfile(m).read())
def pack(path):
    full = inside(path)
    if not os.path.lexists(full):
        die(MISSING, "no such file: %s" % path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(full, arcname=os.path.basename(full) or ".")
    sys.stdout.write(base64.b64encode(buf.getvalue()).decode())
def protected(names_json):
    names = set(json.loads(names_json))
    for root, dirs, files in os.walk(W):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if name in names:
                print(os.path.relpath(os.path.join(root, name), W))
{"read": read, "put": put, "pack": pack, "protected": protected}[OP](*ARGS)
""".replace("ESCAPE", str(ESCAPE_EXIT)).replace("MISSING", str(MISSING_EXIT))


def helper_command(op: str, *args: str) -> str:
    """The shell command that runs the helper operation `op` with `args` (isolated python)."""
    quoted = " ".join(shlex.quote(a) for a in (WORKDIR, op, *args))
    return f"python3 -I -c {shlex.quote(HELPER_SOURCE)} {quoted}"
