"""Tests for ``arctic_swe.deck._repo``: one generated task is a coherent, fixable repository."""

import random
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe.deck import generate_task


@given(st.integers(min_value=0, max_value=2**32))
def test_issue_names_the_file_function_and_both_lines(seed: int) -> None:
    task = generate_task(random.Random(seed), "t")
    assert f"`{task.bug_path}`" in task.issue
    assert f"`{task.old_line}`" in task.issue
    assert f"`{task.new_line}`" in task.issue
    assert task.files[task.bug_path].count(task.old_line) == 1
    function = task.fail_to_pass[0].split("::test_")[1]
    assert f"`{function}`" in task.issue
    assert task.graded_file in task.files
    assert all(test.startswith(task.graded_file + "::") for test in task.pass_to_pass)


@settings(max_examples=5)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_gold_patch_is_the_issue_fix_and_applies_with_git(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    task = generate_task(random.Random(seed), "t")
    root: Path = tmp_path_factory.mktemp("repo")
    for path, text in task.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "apply"], cwd=root, input=task.gold_patch.encode(), check=True)
    fixed = (root / task.bug_path).read_text()
    assert fixed == task.files[task.bug_path].replace(task.old_line, task.new_line)
