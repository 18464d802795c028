"""A real project in its own environment image: `isodate` 0.6.1, which imports `six`.

The published sdist is fetched at test time with the host's ``pip download`` (sha256-checked,
cached under ``$SWE_SANDBOX_CACHE/test-downloads``; never vendored). Its environment image is
built with `build_env_image` — the base's Python, ``six==1.16.0`` from a host wheelhouse, the
pristine sdist tree at ``/testbed`` — and cached by content hash, so a second session reuses
it. The task's repository is the sdist with a one-line bug in ``Duration.__neg__`` (months
keep their sign); the gold patch restores it; the test modules are withheld and graded, and
FAIL_TO_PASS / PASS_TO_PASS are measured in the environment (as SWE-bench validation does).
The base image has no `six`, so a pass of ``test_pickle.py`` (``from six.moves import
cPickle``) shows the tests ran on the environment's interpreter.
"""

from __future__ import annotations

import difflib
import hashlib
import subprocess
import tarfile
from pathlib import Path

import attrs

from swe_sandbox import (
    Backend,
    EnvironmentBuildError,
    EnvSpec,
    RepoSource,
    Sandbox,
    TaskSpec,
    build_env_image,
)
from swe_sandbox._archive import safe_extract
from swe_sandbox._env_image import host_pip
from swe_sandbox._results import TestOutcome
from swe_sandbox._rootfs import cache_root

PROJECT, VERSION = "isodate", "0.6.1"
SDIST_SHA256 = "48c5881de7e8b0a0d648cb024c8062dc84e7b840ed81e864c7614fd3c127bde9"
REQUIREMENTS = ("six==1.16.0",)
MODULE = "src/isodate/duration.py"
CORRECT = "        negduration = Duration(years=-self.years, months=-self.months)\n"
BUGGY = "        negduration = Duration(years=-self.years, months=self.months)\n"
TEST_DIR = "src/isodate/tests"


def download_sdist() -> Path:
    """The verified sdist, from the cache or ``pip download`` (the host reaches the index)."""
    folder = cache_root() / "test-downloads"
    target = folder / f"{PROJECT}-{VERSION}.tar.gz"
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == SDIST_SHA256:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [*host_pip(), "download", "--no-deps", "--no-binary=:all:",
         "--disable-pip-version-check", "-d", str(folder), f"{PROJECT}=={VERSION}"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    if hashlib.sha256(target.read_bytes()).hexdigest() != SDIST_SHA256:
        raise RuntimeError("sdist sha256 mismatch")
    return target


def host_pip_available() -> bool:
    try:
        host_pip()
    except EnvironmentBuildError:
        return False
    return True


def env_spec() -> EnvSpec:
    return EnvSpec(
        name="isodate",
        requirements=REQUIREMENTS,
        repo=str(download_sdist()),
        strip_components=1,
    )


def build_isodate_env() -> str:
    return build_env_image(env_spec())


def make_isodate_task(root: Path, environment: str, backend: Backend) -> TaskSpec:
    """The buggy task on `environment`; F2P / P2P measured on `backend` in that environment."""
    sdist = download_sdist()
    fixed, buggy = root / "fixed", root / "buggy"
    for tree in (fixed, buggy):
        with tarfile.open(sdist) as archive:
            safe_extract(archive, tree, strip_components=1)
    source = (fixed / MODULE).read_text()
    assert source.count(CORRECT) == 1, "duration.py changed shape: the bug has no anchor"
    (buggy / MODULE).write_text(source.replace(CORRECT, BUGGY))
    gold = "".join(
        difflib.unified_diff(
            (buggy / MODULE).read_text().splitlines(keepends=True),
            source.splitlines(keepends=True),
            fromfile=f"a/{MODULE}",
            tofile=f"b/{MODULE}",
        )
    )
    tests = tuple(
        sorted(p.relative_to(buggy).as_posix() for p in (buggy / TEST_DIR).glob("test_*.py"))
    )
    unmeasured = TaskSpec(
        instance_id=f"{PROJECT}-{VERSION}-neg-months",
        repo=RepoSource.directory(buggy),
        environment=environment,
        problem_statement="-Duration(years=1, months=1) keeps months=+1 instead of -1.",
        gold_patch=gold,
        graded_files=tests,
        test_command=f"python3 -m pytest -p no:cacheprovider {TEST_DIR}",
    )
    before = outcomes(unmeasured, backend, "")
    after = outcomes(unmeasured, backend, gold)
    passed = TestOutcome.PASSED
    f2p = tuple(sorted(t for t, o in after.items() if o is passed and before.get(t) is not passed))
    p2p = tuple(sorted(t for t, o in after.items() if o is passed and before.get(t) is passed))
    return attrs.evolve(unmeasured, fail_to_pass=f2p, pass_to_pass=p2p)


def outcomes(task: TaskSpec, backend: Backend, patch: str) -> dict[str, TestOutcome]:
    with Sandbox.create(task, backend) as sandbox:
        if patch:
            sandbox.apply_patch(patch)
        return dict(sandbox.grade().report)
