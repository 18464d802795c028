"""Grade the patch, not the sandbox (Arctic-SWE §5, evaluation-hacking prevention).

At grading time the agent's sandbox contributes exactly one thing: its change, taken as a
``git diff`` of the whole working tree against the base commit (every file — ignored and
``info/exclude``-d ones, binaries, mode changes, symlinks — computed with the grader's own git
directory, never the agent's ``.git``). The patch policy (`swe_sandbox._policy`) drops what
the grader owns; the rest is applied to a pristine tree in a **fresh sandbox the agent never
touched**, the graded tests are restored from the task, and the tests run there. The fresh
sandbox is closed afterwards: nothing written during grading is ever visible to the agent.

Everything the agent can cause ends in reward 0 with a reason code (``diff-failed``,
``patch-failed``, ``restore-failed``, ``tampered``, ``suspicious-patch``); only an
infrastructure failure (a sandbox that cannot start) raises `GradingError`.
"""

from __future__ import annotations

import base64
import io
import json
import random
import secrets
import shlex
import tarfile
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from swe_sandbox._backend import WORKDIR, Backend
from swe_sandbox._canary import CanaryPlan, plan_canaries
from swe_sandbox._errors import GradingError, SandboxError
from swe_sandbox._layout import ancestors as _ancestors
from swe_sandbox._limits import Limits
from swe_sandbox._policy import (
    filter_patch,
    graded_paths,
    suspicious_references,
    task_layout,
)
from swe_sandbox._prepare import PreparedRepo, base_contents, prepare_repo
from swe_sandbox._results import GradeResult, TestOutcome
from swe_sandbox._runner import run_tests
from swe_sandbox._task import TaskSpec

if TYPE_CHECKING:
    from swe_sandbox._sandbox import Sandbox

#: Largest patch grading accepts (bigger trees are an agent fault: reward 0, ``diff-failed``).
MAX_PATCH_BYTES = 16 << 20


@attrs.frozen(kw_only=True)
class GradingPolicy:
    """How verdicts treat the cheap in-process-tampering detector.

    Attributes:
        zero_on_flag: score 0 (reason ``suspicious-patch``) when the graded patch names
            test-framework internals or the report channel; by default they are only flagged.
    """

    zero_on_flag: bool = False


#: Runs as the agent uid in the agent's sandbox *after* every agent process was killed. The
#: grader's own git directory (the pristine ``.git`` of the task) arrives on stdin; the agent's
#: ``.git`` (config, hooks, objects, index) is never read. Files are listed with ``find`` so
#: ignore rules and nested repositories cannot hide anything. The patch leaves as base64 (exact
#: bytes, nothing of stderr mixed in); on failure the script prints git's error instead.
DIFF_SCRIPT = r"""
set -e
base="$1"
G=$(mktemp -d /tmp/.swe-diff-XXXXXXXX)
trap 'rc=$?; [ $rc = 0 ] || cat "$G/err"; rm -rf "$G"; exit $rc' EXIT
exec 2>"$G/err"
tar -x -C "$G" -f -
chmod -R u+rwX /work || true
export GIT_DIR="$G/.git" GIT_WORK_TREE=/work GIT_INDEX_FILE="$G/index" HOME="$G"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1
cd /work
find . -name .git -prune -o \( -type f -o -type l \) -printf '%P\0' > "$G/files"
git update-index --add -z --stdin < "$G/files"
git -c core.quotePath=true diff --cached --binary --full-index --no-renames --no-textconv \
  --no-ext-diff --no-color "$base" -- > "$G/patch"
base64 -w0 "$G/patch"
"""

_git_tars: dict[tuple[str, int], bytes] = {}


def git_dir_tar(prepared: PreparedRepo) -> bytes:
    """The pristine ``.git`` of a prepared repository as a tar (cached per repository)."""
    key = (prepared.base_commit, len(prepared.tar_bytes))
    if key not in _git_tars:
        out = io.BytesIO()
        with (
            tarfile.open(fileobj=io.BytesIO(prepared.tar_bytes)) as source,
            tarfile.open(fileobj=out, mode="w") as target,
        ):
            for member in source.getmembers():
                if member.name == ".git" or member.name.startswith(".git/"):
                    data = source.extractfile(member) if member.isfile() else None
                    target.addfile(member, data)
        if len(_git_tars) > 16:
            _git_tars.clear()
        _git_tars[key] = out.getvalue()
    return _git_tars[key]


class AgentFaultError(Exception):
    """Something the agent did makes grading impossible: the verdict is 0 with this reason."""


def agent_patch(sandbox: Sandbox, prepared: PreparedRepo) -> str:
    """The raw agent diff against the base (unfiltered); `AgentFaultError` when it cannot be taken."""
    command = f"bash -c {shlex.quote(DIFF_SCRIPT)} diff {shlex.quote(prepared.base_commit)}"
    try:
        done = sandbox.run_internal(
            command,
            stdin=git_dir_tar(prepared),
            timeout=300,
            output_limit=MAX_PATCH_BYTES // 3 * 4 + 4,  # base64 of the patch bytes
        )
    except SandboxError as exc:
        raise AgentFaultError(f"diff-failed: {exc}") from exc
    if done.truncated:
        raise AgentFaultError(f"diff-failed: the change is larger than {MAX_PATCH_BYTES} bytes")
    if not done.ok:
        raise AgentFaultError(f"diff-failed: {done.output.strip()[-500:]}")
    try:
        raw = base64.b64decode(done.output.strip(), validate=True)
    except ValueError as exc:
        raise AgentFaultError(f"diff-failed: unreadable diff output: {exc}") from exc
    # Patch bytes that are not UTF-8 (a latin-1 source file) survive the round trip.
    return raw.decode("utf-8", "surrogateescape")


def zero(task: TaskSpec, reason: str, began: float) -> GradeResult:
    """A reward-0 verdict that never ran the tests."""
    return GradeResult(
        reward=0,
        tests=dict.fromkeys(task.graded_tests, TestOutcome.MISSING),
        runner_exit_code=-1,
        reasons=(reason,),
        report_found=False,
        duration_s=time.monotonic() - began,
    )


def grade_patch(
    task: TaskSpec,
    patch: str,
    backend: Backend,
    *,
    limits: Limits | None = None,
    image: str | None = None,
    masked: tuple[str, ...] | None = None,
    policy: GradingPolicy | None = None,
    prepared: PreparedRepo | None = None,
) -> GradeResult:
    """Grade `patch` (a ``git diff`` against the task's base, e.g. a stored `Sandbox.diff`)
    in a fresh sandbox: policy filter, pristine tree, graded tests from the task, isolated run.

    Returns the verdict with ``patch`` (what was graded), ``dropped`` and ``flags``. Raises
    `GradingError` only when no sandbox can be started (infrastructure, not the patch).
    The grading sandbox runs on `image` (default: the task's `TaskSpec.environment_image`),
    with `masked` (default: the task's `TaskSpec.masked_paths`) hidden.
    """
    from swe_sandbox._sandbox import Sandbox

    began = time.monotonic()
    policy = policy or GradingPolicy()
    prepared = prepared or prepare_repo(task)
    filtered = filter_patch(patch, task_layout(task, prepared))
    flags = suspicious_references(filtered.patch)
    try:
        fresh = Sandbox.start(
            backend,
            limits,
            image=image or task.environment_image,
            masked=task.masked_paths if masked is None else masked,
        )
    except SandboxError as exc:
        raise GradingError(f"cannot start the grading sandbox: {exc}") from exc
    try:
        try:
            fresh.load(task, prepared=prepared)
        except SandboxError as exc:
            raise GradingError(f"cannot load the pristine tree: {exc}") from exc
        result = _grade_in(fresh, task, prepared, filtered.patch, began)
    finally:
        fresh.close()
    result = attrs.evolve(
        result,
        patch=filtered.patch,
        dropped=filtered.dropped,
        flags=(*result.flags, *flags),
        duration_s=time.monotonic() - began,
    )
    if flags and policy.zero_on_flag:
        reason = f"suspicious-patch: {'; '.join(flags[:5])}"
        result = attrs.evolve(result, reward=0, reasons=(*result.reasons, reason))
    if result.reward == 0 and filtered.dropped:  # say what was not graded: it may be why
        shown = "; ".join(filtered.dropped[:5])
        more = f" (+{len(filtered.dropped) - 5} more)" if len(filtered.dropped) > 5 else ""
        reason = f"dropped: not graded, outside the package under test: {shown}{more}"
        result = attrs.evolve(result, reasons=(*result.reasons, reason))
    return result


def _grade_in(
    fresh: Sandbox, task: TaskSpec, prepared: PreparedRepo, patch: str, began: float
) -> GradeResult:
    if patch.strip():
        applied = fresh.run_internal(
            "git apply --whitespace=nowarn -",
            stdin=patch.encode("utf-8", "surrogateescape"),
            timeout=120,
        )
        if not applied.ok:
            return zero(task, f"patch-failed: {applied.output.strip()[-500:]}", began)
    guarded = guard_paths(task, prepared)
    base = base_contents(prepared, [*config_paths(task), *graded_modules(task)])  # one tar read
    plan = canary_plan(task, prepared, base)
    try:
        fresh.restore({**pristine_config(task, base), **prepared.restore_files, **plan.files})
        _seal(fresh)
        before = fingerprint(fresh, guarded)
    except (SandboxError, OSError) as exc:
        return zero(task, f"restore-failed: {exc}", began)
    try:
        result = run_tests(fresh, task, fresh.limits.grade_timeout_s, plan.canaries)
    except GradingError:
        raise
    except SandboxError as exc:  # the code under test took the grading sandbox down
        return zero(task, f"run-failed: {exc}", began)
    try:
        after = fingerprint(fresh, guarded)
    except SandboxError as exc:
        after = {"<fingerprint>": str(exc)}
    changed = sorted(p for p in {*guarded, *after} if before.get(p) != after.get(p))
    if changed:
        reason = f"tampered: graded files changed during the run: {', '.join(changed[:5])}"
        result = attrs.evolve(result, reward=0, reasons=(*result.reasons, reason))
    return result


#: pytest's configuration files; the run always reads their base content.
CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def pristine_config(task: TaskSpec, base: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """Base content of every pytest configuration file pytest could pick for the graded files
    (the root and each directory above a graded file): even where the task lets the patch
    change one (`TaskSpec.allowed_config_paths`), pytest's options stay the repository's."""
    return {path: base.get(path) for path in config_paths(task)}


def config_paths(task: TaskSpec) -> list[str]:
    graded = graded_paths(task.withheld_paths, task.graded_tests)
    dirs = {""} | {d for path in graded for d in _ancestors(path)}
    return [f"{d}/{name}".lstrip("/") for d in sorted(dirs) for name in CONFIG_NAMES]


def graded_modules(task: TaskSpec) -> list[str]:
    return sorted({t.split("::", 1)[0] for t in task.graded_tests})


def canary_plan(
    task: TaskSpec, prepared: PreparedRepo, base: Mapping[str, bytes | None]
) -> CanaryPlan:
    """Canaries for the modules holding graded tests (withheld content, else the base)."""
    texts = {p: prepared.restore_files.get(p, base.get(p)) for p in graded_modules(task)}
    files = {p: data for p, data in texts.items() if data is not None}
    rng = random.Random(secrets.randbits(64))  # fresh names and choices every grade
    return plan_canaries(files, task.graded_tests, rng, fail_to_pass=task.fail_to_pass)


def _seal(fresh: Sandbox) -> None:
    """Make the tree read-only for the test run: it runs as another uid (`TESTER_UID`) than
    the tree's owner, and no file or directory is group/other-writable — the code under test
    can import the tree but not add, change or remove a file in it while the tests run."""
    done = fresh.run_internal(
        f"find {WORKDIR} ! -type l -perm /022 -exec chmod go-w {{}} +", timeout=120
    )
    if not done.ok:
        raise SandboxError(f"cannot seal the tree: {done.output.strip()[-500:]}")


def guard_paths(task: TaskSpec, prepared: PreparedRepo) -> tuple[str, ...]:
    """Graded files plus the ``conftest.py`` / ``__init__.py`` on their way: what the test run
    must not rewrite (checked by inode, ctime, size and hash before and after)."""
    files = graded_paths(task.withheld_paths, task.graded_tests) | set(prepared.restore_files)
    found: set[str] = set(files)
    for path in files:
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            prefix = "/".join(parts[:depth])
            for name in ("conftest.py", "__init__.py"):
                found.add(f"{prefix}/{name}" if prefix else name)
    return tuple(sorted(found))


_FINGERPRINT = r"""
import hashlib, json, os, sys
out = {}
for path in json.loads(sys.argv[1]):
    try:
        st = os.lstat(path)
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        out[path] = [st.st_ino, st.st_ctime_ns, st.st_size, st.st_mode, digest]
    except OSError as exc:
        out[path] = [type(exc).__name__]
print(json.dumps(out))
"""


def fingerprint(fresh: Sandbox, paths: tuple[str, ...]) -> dict[str, object]:
    """Inode, ctime, size, mode and sha256 of each path (or the error reading it)."""
    command = f"python3 -I -c {shlex.quote(_FINGERPRINT)} {shlex.quote(json.dumps(paths))}"
    done = fresh.run_internal(command, timeout=60, output_limit=4 << 20)
    if not done.ok:
        raise SandboxError(f"fingerprint failed: {done.output.strip()[-500:]}")
    found: dict[str, object] = json.loads(done.output)
    return found
