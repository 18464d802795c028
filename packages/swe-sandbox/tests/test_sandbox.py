"""End-to-end grading on both backends: the reward contract on real tasks, stable across reruns.

Tasks: the generated toy repository and `six` 1.17.0 from PyPI with its own test suite.
"""

from __future__ import annotations

import pytest

from swe_sandbox import (
    Backend,
    EpisodeEndedError,
    Sandbox,
    TaskSpec,
    TestOutcome,
    grade_patch,
)


@pytest.mark.parametrize("task_name", ["toy_task", "six_task"])
def test_gold_scores_one_and_empty_scores_zero_three_times(
    backend: Backend, task_name: str, request: pytest.FixtureRequest
) -> None:
    task: TaskSpec = request.getfixturevalue(task_name)
    with Sandbox.create(task, backend) as sandbox:
        empty = [sandbox.grade() for _ in range(3)]
        sandbox.apply_patch(task.gold_patch)
        gold = [sandbox.grade() for _ in range(3)]
    for result in empty:
        assert result.reward == 0
        assert result.report_found
        for test in task.fail_to_pass:
            assert result.tests[test] is TestOutcome.FAILED
    for result in gold:
        assert result.reward == 1, result.reasons
        assert result.runner_exit_code == 1  # the must-fail canaries failed, as they must
        assert any(not must_pass for must_pass in result.canaries.values())
        assert set(result.tests) == set(task.graded_tests)
        assert all(o is TestOutcome.PASSED for o in result.tests.values())


def test_tools_edit_then_submit(backend: Backend, toy_task: TaskSpec) -> None:
    with Sandbox.create(toy_task, backend) as sandbox:
        listing = sandbox.execute_bash("ls tests; git status --short")
        assert listing.ok
        assert "test_add.py" not in listing.output  # withheld
        observation = sandbox.edit_via_str_replace(
            "calc/core.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"
        )
        assert "return a + b" in observation
        assert "return a + b" in sandbox.diff()
        assert "test_add.py" not in sandbox.diff()
        stored = sandbox.diff()
        result = sandbox.submit()
        assert sandbox.submitted
        assert result.reward == 1, result.reasons
        assert result.patch == stored  # diff() is exactly what was graded
        # the episode is over: every agent tool refuses with a typed error
        with pytest.raises(EpisodeEndedError):
            sandbox.execute_bash("ls tests")
        with pytest.raises(EpisodeEndedError):
            sandbox.edit_via_str_replace("calc/core.py", "a + b", "a - b")
        with pytest.raises(EpisodeEndedError):
            sandbox.submit()
        # grading ran elsewhere: nothing of it is in this sandbox
        assert "test_add.py" not in sandbox.run("ls tests").output
        assert sandbox.run("ls -A /grader", user="root").output.strip() == ""
        sandbox.reset(toy_task)  # reopens the episode
        assert sandbox.execute_bash("true").ok
    # a stored diff graded through the public API reproduces the reward
    again = grade_patch(toy_task, stored, backend)
    assert (again.reward, again.patch) == (1, stored)
    assert grade_patch(toy_task, "", backend).reward == 0


def test_sandbox_id_is_public_and_unique(backend: Backend, toy_task: TaskSpec) -> None:
    with (
        Sandbox.create(toy_task, backend) as one,
        Sandbox.create(toy_task, backend) as two,
    ):
        assert one.id
        assert two.id
        assert one.id != two.id
        assert one.id == one._live().sandbox_id
