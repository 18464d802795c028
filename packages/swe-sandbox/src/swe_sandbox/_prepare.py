"""Host-side preparation of the tree the agent sees (Arctic-SWE §5: prune git history, withhold the graded tests).

The agent's repository is rebuilt from scratch: a fresh ``git init`` that *fetches only the
base commit* from the source, so no object newer than the base exists in it — nothing for
``git log --all``, tags, reflog, packed refs, stash or ``fsck --lost-found`` to find, and
``git log -S<gold token>`` has nothing to search. Graded tests and runner files are computed
here (base tree + test patch) and kept on the host; they enter the sandbox only at grading.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from swe_sandbox._archive import safe_extract
from swe_sandbox._errors import (
    BaseCommitNotFoundError,
    PatchApplyError,
    RepoNotFoundError,
    SandboxError,
)
from swe_sandbox._task import RepoKind, TaskSpec

#: uid/gid of the unprivileged agent user inside every sandbox.
AGENT_UID = 1000
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "swe-sandbox",
    "GIT_AUTHOR_EMAIL": "swe-sandbox@localhost",
    "GIT_COMMITTER_NAME": "swe-sandbox",
    "GIT_COMMITTER_EMAIL": "swe-sandbox@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "GIT_TERMINAL_PROMPT": "0",
}


@attrs.frozen(kw_only=True)
class PreparedRepo:
    """The agent-visible tree as a tar archive plus the files grading restores.

    Attributes:
        tar_bytes: the repository (with its pruned ``.git``), owned by the agent uid.
        base_commit: the commit HEAD points at inside the sandbox.
        restore_files: withheld path -> content to write before grading (``None`` = delete).
        files: every file and symlink of the agent-visible base tree (``.git`` excluded): what
            the patch policy derives the package under test from (`swe_sandbox._layout`).
    """

    tar_bytes: bytes
    base_commit: str
    restore_files: Mapping[str, bytes | None]
    files: tuple[str, ...] = ()


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **_GIT_ENV, "HOME": str(cwd)}
    result = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        raise SandboxError(f"git {' '.join(args)} failed in {cwd}: {result.stderr.strip()}")
    return result


def _materialize(task: TaskSpec, scratch: Path) -> Path:
    source = Path(task.repo.location)
    if task.repo.kind is RepoKind.DIRECTORY:
        if not source.is_dir():
            raise RepoNotFoundError(f"{task.instance_id}: repository directory {source} not found")
        return source
    if task.repo.kind is RepoKind.TARBALL:
        if not source.is_file():
            raise RepoNotFoundError(f"{task.instance_id}: repository tarball {source} not found")
        tree = scratch / "tree"
        tree.mkdir()
        try:
            with tarfile.open(source) as archive:
                safe_extract(archive, tree, strip_components=task.repo.strip_components)
        except tarfile.TarError as exc:
            raise RepoNotFoundError(
                f"{task.instance_id}: {source} is not a tarball: {exc}"
            ) from exc
        return tree
    from swe_sandbox._docker_image import export_tree_from_image

    tree = scratch / "tree"
    tree.mkdir()
    export_tree_from_image(task.repo.location, task.repo.path_in_image, tree)
    return tree


def _resolve_base(task: TaskSpec, source: Path) -> str | None:
    """The full base commit id in `source`, or ``None`` for a plain (non-git) tree."""
    is_git = (source / ".git").exists()
    if task.base_commit is None:
        if not is_git:
            return None
        return _git(source, "rev-parse", "HEAD").stdout.strip()
    if not is_git:
        raise BaseCommitNotFoundError(
            f"{task.instance_id}: base commit {task.base_commit} given but {source} is no git repo"
        )
    found = _git(
        source, "rev-parse", "--verify", "--quiet", f"{task.base_commit}^{{commit}}", check=False
    )
    if found.returncode != 0:
        raise BaseCommitNotFoundError(
            f"{task.instance_id}: base commit {task.base_commit} not in {source}"
        )
    return found.stdout.strip()


def _fetch_base_only(source: Path, base: str, dest: Path) -> None:
    """A fresh repo holding exactly the objects reachable from `base` (nothing newer)."""
    dest.mkdir()
    _git(dest, "init", "-q")
    upload_pack = "git -c uploadpack.allowAnySHA1InWant=true upload-pack"
    _git(dest, "fetch", "-q", "--no-tags", f"--upload-pack={upload_pack}", str(source), base)
    _git(dest, "checkout", "-q", "-B", "main", base)


def _commit_plain_tree(source: Path, dest: Path, withheld: tuple[str, ...]) -> str:
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    for path in withheld:
        (dest / path).unlink(missing_ok=True)
    _git(dest, "init", "-q")
    # -f: the plain tree is the base, files its .gitignore lists included (an sdist's egg-info):
    # left out, the grader's diff would see them as the agent's additions.
    _git(dest, "add", "-A", "-f")
    _git(dest, "commit", "-q", "--allow-empty", "-m", "base")
    return _git(dest, "rev-parse", "HEAD").stdout.strip()


def _prune_history(repo: Path) -> None:
    """Drop everything but HEAD's history: reflogs, FETCH_HEAD, ORIG_HEAD, unreachable objects."""
    git_dir = repo / ".git"
    for name in ("FETCH_HEAD", "ORIG_HEAD", "logs", "hooks", "description"):
        target = git_dir / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    _git(repo, "reflog", "expire", "--expire=now", "--all")
    _git(repo, "gc", "-q", "--prune=now")


def _graded_contents(
    task: TaskSpec, source: Path, base: str | None, scratch: Path
) -> dict[str, bytes | None]:
    """Base tree + test patch, read back for every withheld path (the grading-time truth)."""
    work = scratch / "graded"
    if base is None:
        shutil.copytree(source, work, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        _git(work, "init", "-q")
    else:
        _fetch_base_only(source, base, work)
    if task.test_patch:
        patch_file = scratch / "test.patch"
        patch_file.write_text(task.test_patch)
        applied = _git(work, "apply", "--whitespace=nowarn", str(patch_file), check=False)
        if applied.returncode != 0:
            raise PatchApplyError(
                f"{task.instance_id}: test patch does not apply: {applied.stderr.strip()}"
            )
    contents: dict[str, bytes | None] = {}
    for path in task.graded_files:
        file = work / path
        contents[path] = file.read_bytes() if file.is_file() and not file.is_symlink() else None
    for path, text in task.runner_files.items():
        contents[path] = text.encode()
    return contents


def base_contents(prepared: PreparedRepo, paths: Iterable[str]) -> dict[str, bytes | None]:
    """The base content of regular files `paths` in the agent tree (``None``: absent there)."""
    wanted = dict.fromkeys(paths)
    found: dict[str, bytes | None] = dict.fromkeys(wanted)
    with tarfile.open(fileobj=io.BytesIO(prepared.tar_bytes)) as archive:
        for member in archive:
            name = member.name.removeprefix("./")
            if name in wanted and member.isfile():
                data = archive.extractfile(member)
                found[name] = data.read() if data is not None else None
    return found


def tree_files(repo: Path) -> tuple[str, ...]:
    """Every file and symlink under `repo` (``.git`` excluded), as sorted POSIX paths."""
    found: list[str] = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        found += [Path(root, name).relative_to(repo).as_posix() for name in files]
        found += [
            Path(root, d).relative_to(repo).as_posix() for d in dirs if Path(root, d).is_symlink()
        ]
    return tuple(sorted(found))


def _tar_for_agent(repo: Path) -> bytes:
    def owned_by_agent(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = AGENT_UID
        info.uname = info.gname = "agent"
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(repo.iterdir()):
            archive.add(entry, arcname=entry.name, filter=owned_by_agent)
    return buffer.getvalue()


def task_key(task: TaskSpec) -> str:
    """A content key of the task definition (sha256 of its fields)."""
    blob = json.dumps(attrs.asdict(task, value_serializer=_jsonable), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _jsonable(_inst: object, _field: object, value: object) -> object:
    return getattr(value, "value", value)


_cache: dict[str, PreparedRepo] = {}
_cache_lock = threading.Lock()


def prepare_repo(task: TaskSpec, *, use_cache: bool = True) -> PreparedRepo:
    """Build (or reuse) the agent tree of `task`; raises typed errors for bad sources."""
    key = task_key(task)
    with _cache_lock:
        if use_cache and key in _cache:
            return _cache[key]
    with tempfile.TemporaryDirectory(prefix="swe-prepare-") as tmp:
        scratch = Path(tmp)
        source = _materialize(task, scratch)
        base = _resolve_base(task, source)
        agent_repo = scratch / "agent"
        if base is None:
            base = _commit_plain_tree(source, agent_repo, task.withheld_paths)
        else:
            _fetch_base_only(source, base, agent_repo)
            for path in task.withheld_paths:  # the agent never sees graded files at all
                target = agent_repo / path
                if target.is_file() or target.is_symlink():
                    target.unlink()
        is_git = (source / ".git").exists()
        restore = _graded_contents(task, source, base if is_git else None, scratch)
        files = tree_files(agent_repo)
        _prune_history(agent_repo)
        prepared = PreparedRepo(
            tar_bytes=_tar_for_agent(agent_repo),
            base_commit=base,
            restore_files=restore,
            files=files,
        )
    with _cache_lock:
        _cache[key] = prepared
    return prepared
