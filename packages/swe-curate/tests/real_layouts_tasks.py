"""Tasks on the real-layout corpus: download, inject the pinned bug, measure, build the fixes.

FAIL_TO_PASS / PASS_TO_PASS are measured with *plain* pytest in the sandbox's environment
(buggy tree, then gold), not with the grader under test: the expectation must not inherit a
grader's blind spot (a layout it cannot collect would otherwise measure as "no tests").
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import attrs
from real_layouts import SEED, Project

from swe_curate._diff import make_patch
from swe_curate._inject import Mutant, issue_text, mutants, unpack_source
from swe_curate._scorer import SandboxScorer
from swe_sandbox import DEFAULT_TEST_COMMAND, RepoSource, TaskSpec
from swe_sandbox._rootfs import cache_root

_PASSED = re.compile(r"^PASSED (.+?)\s*$", re.M)


@dataclass(frozen=True)
class BuiltTask:
    """A measured task and the patches the tests grade on it."""

    project: Project
    task: TaskSpec
    mutant: Mutant
    buggy: Path
    fix_patch: str


def download(project: Project) -> Path:
    """The verified sdist, from the swe-sandbox cache or the package index's simple page."""
    target = cache_root() / "test-downloads" / project.filename
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == project.sha256:
        return target
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    page_url = f"{index}/{project.name}/"
    with urllib.request.urlopen(page_url, timeout=60) as response:
        page = response.read().decode()
    links = [h for h in re.findall(r'href="([^"]+)"', page) if project.filename in h]
    if not links:
        raise RuntimeError(f"{project.filename} is not in {page_url}")
    url = urllib.parse.urljoin(page_url, links[0].split("#")[0])
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != project.sha256:
        raise RuntimeError(f"{project.filename}: sha256 mismatch")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def pinned_mutant(project: Project, tree: Path) -> Mutant:
    """The pinned mutant, from the seeded mutant order of its file alone (no search runs)."""
    pin = project.pin
    source = (tree / pin.path).read_text(encoding="utf-8")
    for mutant in mutants({pin.path: source}, random.Random(SEED), per_function=64):
        key = (mutant.qualname, mutant.mutator, mutant.description)
        if key == (pin.qualname, pin.mutator, pin.description):
            return mutant
    raise AssertionError(f"{project.id}: the pinned mutant {pin} is gone")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def tree_patch(buggy: Path, scratch: Path, edits: list[tuple[str, str]], project: Project) -> str:
    """The ``git diff`` (binary, renames, modes) that a fix made on a copy of the buggy tree:
    ``edits`` restore (path, text) first, then the project's own fix runs."""
    work = scratch / "fix"
    shutil.copytree(buggy, work, symlinks=True)
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "base")
    for path, text in edits:
        (work / path).write_text(text, encoding="utf-8")
    project.fix(work)
    _git(work, "add", "-A")
    return _git(work, "diff", "--cached", "--binary", "-M", "HEAD")


def passed_tests(scorer: SandboxScorer, task: TaskSpec, patch: str) -> set[str]:
    """Test ids that plain pytest reports PASSED on the tree after ``patch``.

    Two documented traits of a graded run are reproduced, as tests depend on them: the tree is
    read-only (pyfakefs's tests write into it when the bug disables the fake filesystem), and
    pytest plugins are not auto-loaded from entry points (Faker's pytester test expects its
    plugin from the in-tree egg-info).
    """
    command = f"chmod -R a-w . && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {task.test_command}"
    done = scorer.run(task, patch, command, timeout=300)
    return set(_PASSED.findall(done.output))


def build_task(project: Project, root: Path, scorer: SandboxScorer) -> BuiltTask:
    """Download, inject, measure on ``scorer``'s backend; F2P and P2P must both be non-empty."""
    original = unpack_source(download(project), root / "original")
    mutant = pinned_mutant(project, original)
    buggy = root / "buggy"
    shutil.copytree(original, buggy, symlinks=True)
    (buggy / mutant.path).write_text(mutant.mutated, encoding="utf-8")
    restore = [(mutant.path, mutant.original)]
    test_patch = ""
    if project.added_test:
        graded = project.graded_files[0]
        old = (buggy / graded).read_text(encoding="utf-8")
        test_patch = make_patch({graded: old}, {graded: old + project.added_test})
    fix_patch = tree_patch(buggy, root, restore, project)
    # The gold patch is the plain revert, plus what a test patch needs besides the test.
    gold_patch = make_patch({mutant.path: mutant.mutated}, {mutant.path: mutant.original})
    if project.added_test:
        gold_patch = fix_patch
    unmeasured = TaskSpec(
        instance_id=f"{project.id}-{mutant.mutator}",
        repo=RepoSource.directory(buggy),
        gold_patch=gold_patch,
        test_patch=test_patch,
        graded_files=project.graded_files,
        test_command=" ".join((DEFAULT_TEST_COMMAND, project.pytest_args, *project.graded_files)),
        allowed_config_paths=project.allowed_config_paths,
    )
    before = passed_tests(scorer, unmeasured, "")
    after = passed_tests(scorer, unmeasured, gold_patch)
    f2p = tuple(sorted(after - before))
    p2p = tuple(sorted(after & before))
    assert f2p, f"{project.id}: the pinned bug breaks no test"
    assert p2p, f"{project.id}: the pinned bug breaks every test"
    task = attrs.evolve(
        unmeasured,
        problem_statement=issue_text(mutant, list(f2p)),
        fail_to_pass=f2p,
        pass_to_pass=p2p,
    )
    return BuiltTask(project, task, mutant, buggy, fix_patch)
