"""`_grading` on both backends: submit never raises for what the agent did, reset is a clean
slate or no sandbox at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_testkit.leaks import live_sandbox_ids

from swe_sandbox import Backend, RepoSource, Sandbox, TaskSpec

#: Damage an agent can do to its own sandbox; grading must still return a verdict.
DAMAGE = {
    "read-only-test-dir": "chmod -R a-w tests",
    "unreadable-source-dir": "chmod 000 calc",
    "no-git-dir": "rm -rf .git",
    "git-dir-is-a-file": "rm -rf .git && echo gitdir: /nowhere > .git",
    "test-dir-symlink-into-git": "mv tests .git/t && ln -s .git/t tests",
    "test-dir-symlink-newline-name": (
        'd="$(printf \'x\\ny\')" && mv tests "$d" && ln -s "$d" tests'
    ),
    "tree-full-of-fifos": "mkfifo calc/pipe tests/pipe",
}


@pytest.fixture(scope="module")
def shared(backend: Backend, toy_task: TaskSpec) -> Iterator[Sandbox]:
    with Sandbox.create(toy_task, backend) as sandbox:
        yield sandbox


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_submit_returns_a_verdict_whatever_the_agent_broke(
    shared: Sandbox, toy_task: TaskSpec, damage: str
) -> None:
    shared.reset(toy_task)
    shared.apply_patch(toy_task.gold_patch)
    assert shared.execute_bash(DAMAGE[damage]).ok
    result = shared.submit()  # must not raise
    # The fix is in calc/core.py and survives every damage above: graded honestly, it passes
    # (the agent's .git, test directory and modes play no part in grading).
    assert result.reward == 1, (damage, result.reasons)


def test_unappliable_patch_is_a_zero_with_a_reason(backend: Backend, toy_task: TaskSpec) -> None:
    from swe_sandbox import grade_patch

    broken = "diff --git a/calc/core.py b/calc/core.py\n--- a/calc/core.py\n+++ b/calc/core.py\n"
    broken += "@@ -1,1 +1,1 @@\n-no such line\n+x\n"
    result = grade_patch(toy_task, broken, backend)
    assert result.reward == 0
    assert result.reason_codes == ("patch-failed",)


def test_reset_is_a_clean_slate(shared: Sandbox, toy_task: TaskSpec) -> None:
    shared.reset(toy_task)
    planted = (
        "echo s > /dev/shm/secret && mkdir -p /work/locked/in /tmp/locked/in"
        " && touch /work/locked/in/f /tmp/locked/in/f"
        " && chmod 000 /work/locked/in /work/locked /tmp/locked/in /tmp/locked"
        " && (setsid sleep 300 >/dev/null 2>&1 &)"
    )
    assert shared.execute_bash(planted).ok
    shared.reset(toy_task)
    check = shared.execute_bash(
        "ls -A /dev/shm; ls -d /work/locked /tmp/locked 2>/dev/null; pgrep -c -u 1000 sleep; true"
    )
    assert check.output.split() == ["0"], check.output


def test_reset_that_cannot_wipe_replaces_the_sandbox(backend: Backend, toy_task: TaskSpec) -> None:
    with Sandbox.create(toy_task, backend) as sandbox:
        first = sandbox.id
        # A file the agent uid cannot delete (root's, in the sticky /tmp).
        assert sandbox.run("touch /tmp/root-owned", user="root").ok
        sandbox.reset(toy_task)
        assert sandbox.id != first  # removed, and a new sandbox took its place
        assert not sandbox.run("test -e /tmp/root-owned").ok
        assert sandbox.execute_bash("ls calc").ok
    assert first not in live_sandbox_ids(backend)


def test_diff_is_byte_exact_and_regrades(shared: Sandbox, toy_task: TaskSpec) -> None:
    """Non-UTF-8 text, form feeds, binaries, modes, ignored files: diff() keeps them all, and
    grading the stored diff reproduces the reward."""
    from swe_sandbox import grade_patch

    shared.reset(toy_task)
    shared.apply_patch(toy_task.gold_patch)
    planted = (  # inside the package: only the package under test is graded
        "cd calc && printf 'caf\\xe9\\n' > latin1.txt && printf 'a\\x0cb\\n' > ff.py"
        " && head -c 300 /dev/urandom > blob.bin && chmod +x core.py"
        " && echo '*.log' > .gitignore && echo kept > ignored.log"
        " && echo hidden >> ../.git/info/exclude && echo x > hidden"
    )
    assert shared.execute_bash(planted).ok
    stored = shared.diff()
    for name in ("latin1.txt", "ff.py", "blob.bin", "ignored.log", "hidden", "new mode 100755"):
        assert name in stored, name
    assert "caf\udce9" in stored  # the latin-1 byte, kept exactly
    result = grade_patch(toy_task, stored, shared._require_backend())
    assert result.reward == 1, result.reasons
    assert result.patch == stored


#: Code under test that writes into the tree while the tests run; the fix only holds when every
#: write fails (a new conftest in the graded test directory, a new module, the package itself).
WRITES_INTO_THE_TREE = """
import os
written = []
for path in ("/work/tests/conftest.py", "/work/calc/planted.py", "/work/calc/core.py", "/work/x"):
    try:
        with open(path, "a") as handle:
            handle.write("")
        written.append(path)
    except OSError:
        pass
if written:
    raise RuntimeError(f"wrote into the tree: {written}")
"""


def test_the_tree_is_read_only_for_the_test_run(shared: Sandbox, toy_task: TaskSpec) -> None:
    from sandbox_testkit.naive import naive_reward

    shared.reset(toy_task)
    shared.apply_patch(toy_task.gold_patch)
    shared.write_file("calc/__init__.py", WRITES_INTO_THE_TREE.encode())
    assert naive_reward(shared, toy_task)[0] == 0  # in place, the writes succeed
    shared.reset(toy_task)
    shared.apply_patch(toy_task.gold_patch)
    shared.write_file("calc/__init__.py", WRITES_INTO_THE_TREE.encode())
    result = shared.submit()
    assert result.reward == 1, result.reasons  # graded, every write failed


def test_a_zero_verdict_names_what_the_policy_dropped(backend: Backend, toy_task: TaskSpec) -> None:
    from swe_sandbox import grade_patch

    fix_outside = (  # the right change, in a new top-level module the tests never import
        "diff --git a/fixed_core.py b/fixed_core.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/fixed_core.py\n@@ -0,0 +1,2 @@\n+def add(a, b):\n+    return a + b\n"
    )
    result = grade_patch(toy_task, fix_outside, backend)
    assert result.reward == 0
    assert result.dropped == ("fixed_core.py: path-entry",)
    assert result.reason_codes[-1] == "dropped"
    assert "fixed_core.py: path-entry" in result.reasons[-1]
    gold = grade_patch(toy_task, toy_task.gold_patch + fix_outside, backend)
    assert (gold.reward, gold.dropped) == (1, ("fixed_core.py: path-entry",))
    assert gold.reasons == ()  # a reward of 1 has no reasons, dropped paths or not


def test_a_root_conftest_and_one_in_a_non_package_tests_dir_grade_correctly(
    backend: Backend, tmp_path: Path
) -> None:
    """Two conftests that pytest imports as the same module name ``conftest`` from different
    inserted directories: with the repository's own import mode they coexist (an append-mode
    grader found the root one twice: ImportPathMismatchError, gold scored 0)."""
    tree = tmp_path / "tree"
    (tree / "calc").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "calc" / "__init__.py").write_text("def scale(x):\n    return x * 3\n")
    (tree / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef base():\n    return 2\n"
    )
    (tree / "tests" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef factor():\n    return 2\n"
    )
    (tree / "tests" / "test_scale.py").write_text(
        "from calc import scale\n\n\ndef test_scale(base, factor):\n"
        "    assert scale(base) == base * factor\n"
    )
    gold = (
        "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n"
        " def scale(x):\n-    return x * 3\n+    return x * 2\n"
    )
    task = TaskSpec(
        instance_id="two-conftests-1",
        repo=RepoSource.directory(tree),
        graded_files=("tests/test_scale.py",),
        fail_to_pass=("tests/test_scale.py::test_scale",),
        gold_patch=gold,
        test_command="python3 -m pytest tests",
    )
    from swe_sandbox import grade_patch

    assert grade_patch(task, gold, backend).reward == 1
    empty = grade_patch(task, "", backend)
    assert (empty.reward, empty.reason_codes) == (0, ("FAIL_TO_PASS",))
