"""A task from a real open-source project: `six` 1.17.0's published sdist and its own tests.

The sdist is downloaded at test time from PyPI's simple index (PEP 503) and verified against
its published sha256; it is cached under the swe-sandbox cache directory, never vendored. A
one-line bug is injected into ``byte2int``; the gold patch reverts it, ``test_six.py`` is the
graded (withheld) file, and FAIL_TO_PASS / PASS_TO_PASS are *measured* by grading the buggy and
the fixed trees in the sandbox environment (as SWE-bench validation does: environment-dependent
skips, e.g. tkinter, must not enter PASS_TO_PASS).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tarfile
import urllib.request
from pathlib import Path

import attrs

from swe_sandbox import Backend, RepoSource, Sandbox, TaskSpec
from swe_sandbox._archive import safe_extract
from swe_sandbox._results import TestOutcome
from swe_sandbox._rootfs import cache_root

PROJECT, VERSION = "six", "1.17.0"
SDIST_SHA256 = "ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81"
CORRECT = "    byte2int = operator.itemgetter(0)\n"
BUGGY = "    byte2int = operator.itemgetter(-1)\n"


def download_sdist() -> Path:
    """The verified sdist, from the cache or PyPI's simple index."""
    target = cache_root() / "test-downloads" / f"{PROJECT}-{VERSION}.tar.gz"
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == SDIST_SHA256:
        return target
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    with urllib.request.urlopen(f"{index}/{PROJECT}/", timeout=60) as response:
        page = response.read().decode()
    links = re.findall(r'href="([^"]+)"', page)
    wanted = [link for link in links if f"{PROJECT}-{VERSION}.tar.gz" in link]
    if not wanted:
        raise RuntimeError(f"{PROJECT} {VERSION} sdist not in the index")
    with urllib.request.urlopen(wanted[0].split("#")[0], timeout=120) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != SDIST_SHA256:
        raise RuntimeError("sdist sha256 mismatch")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def outcomes_in_sandbox(task: TaskSpec, backend: Backend, patch: str) -> dict[str, TestOutcome]:
    """Every test's outcome in the task's own environment, after `patch` (as validation does)."""
    with Sandbox.create(task, backend) as sandbox:
        sandbox.apply_patch(patch)
        return dict(sandbox.grade().report)


def make_six_task(root: Path, backend: Backend) -> TaskSpec:
    """Build the buggy tarball and the task; F2P/P2P measured in `backend`'s environment."""
    sdist = download_sdist()
    fixed = root / "fixed"
    with tarfile.open(sdist) as archive:
        safe_extract(archive, fixed, strip_components=1)
    source = (fixed / "six.py").read_text()
    assert source.count(CORRECT) == 1, "six.py changed shape: the injected bug has no anchor"
    buggy = root / "buggy"
    with tarfile.open(sdist) as archive:
        safe_extract(archive, buggy, strip_components=1)
    (buggy / "six.py").write_text(source.replace(CORRECT, BUGGY))
    gold_patch = "".join(
        difflib.unified_diff(
            (buggy / "six.py").read_text().splitlines(keepends=True),
            source.splitlines(keepends=True),
            fromfile="a/six.py",
            tofile="b/six.py",
        )
    )
    tarball = root / f"{PROJECT}-{VERSION}-buggy.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(buggy, arcname=f"{PROJECT}-{VERSION}")
    unmeasured = TaskSpec(
        instance_id=f"{PROJECT}-{VERSION}-byte2int",
        repo=RepoSource.tarball(tarball, strip_components=1),
        problem_statement="six.byte2int returns the last byte instead of the first on Python 3.",
        gold_patch=gold_patch,
        graded_files=("test_six.py",),
        test_command="python3 -m pytest -p no:cacheprovider test_six.py",
    )
    before = outcomes_in_sandbox(unmeasured, backend, "")
    after = outcomes_in_sandbox(unmeasured, backend, gold_patch)
    passed = TestOutcome.PASSED
    f2p = tuple(sorted(t for t, o in after.items() if o is passed and before.get(t) is not passed))
    p2p = tuple(sorted(t for t, o in after.items() if o is passed and before.get(t) is passed))
    assert f2p == ("test_six.py::test_byte2int",), f2p
    assert len(p2p) > 100, "the real suite should mostly pass"
    return attrs.evolve(unmeasured, fail_to_pass=f2p, pass_to_pass=p2p)
