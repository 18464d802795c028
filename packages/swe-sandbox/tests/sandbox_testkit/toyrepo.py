"""Generated toy tasks: a git repository with a bug at the base commit and newer history.

The repository deliberately holds everything a hacking agent would look for — a fix commit
newer than the base, a tag and a branch on it, a stash and a dangling commit — so the
preparation tests can prove none of it reaches the sandbox.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from swe_sandbox import RepoSource, TaskSpec

#: A token that appears only in the gold patch; `git log -S` must not find it in the sandbox.
GOLD_TOKEN = "GOLDTOKEN_7f3a9c"
#: A token that appears only in the withheld graded tests.
TEST_TOKEN = "HIDDENTEST_51d2e8"

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        env={**os.environ, **_ENV, "HOME": str(repo)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


CORE_BUGGY = '''"""Tiny arithmetic module."""


def add(a, b):
    return a - b


def sub(a, b):
    return a - b
'''
CORE_FIXED = CORE_BUGGY.replace(
    "def add(a, b):\n    return a - b", f"def add(a, b):\n    # {GOLD_TOKEN}\n    return a + b"
)
TEST_CORE = """from calc.core import sub


def test_sub():
    assert sub(5, 3) == 2
"""
TEST_ADD = f"""from calc.core import add


def test_add_positive():
    # {TEST_TOKEN}
    assert add(2, 3) == 5


def test_add_negative():
    assert add(-2, -3) == -5
"""


def make_toy_task(root: Path, instance_id: str = "toy__calc-1") -> TaskSpec:
    """Create the toy repository under `root` and return its task."""
    repo = root / "calc-repo"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo, "init", "-q")
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "core.py").write_text(CORE_BUGGY)
    (repo / "tests" / "test_core.py").write_text(TEST_CORE)
    (repo / "conftest.py").write_text("# repository conftest (base version)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc" / "core.py").write_text(CORE_FIXED)
    git(repo, "commit", "-q", "-am", f"fix add ({GOLD_TOKEN})")
    gold_patch = git(repo, "diff", base, "HEAD") + "\n"
    (repo / "tests" / "test_add.py").write_text(TEST_ADD)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "add tests")
    test_patch = git(repo, "diff", f"{base}~0", "HEAD", "--", "tests") + "\n"
    git(repo, "tag", "v1.0-fixed")
    git(repo, "branch", "feature-fixed")
    (repo / "calc" / "core.py").write_text(CORE_FIXED + f"\n# stashed {GOLD_TOKEN}\n")
    git(repo, "stash", "-q")
    git(repo, "checkout", "-q", base)
    return TaskSpec(
        instance_id=instance_id,
        repo=RepoSource.directory(repo),
        base_commit=base,
        problem_statement="calc.core.add subtracts instead of adding.",
        gold_patch=gold_patch,
        test_patch=test_patch,
        fail_to_pass=(
            "tests/test_add.py::test_add_positive",
            "tests/test_add.py::test_add_negative",
        ),
        pass_to_pass=("tests/test_core.py::test_sub",),
        test_command="python3 -m pytest -p no:cacheprovider tests",
    )
