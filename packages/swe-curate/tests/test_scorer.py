"""The scorer adapter and the host-side task tree, on the real namespace sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest
from curate_tasks import make_task

from swe_curate._errors import CuratePatchApplyError
from swe_curate._scorer import SandboxScorer, TaskTree


def test_task_tree_reads_the_buggy_tree_with_graded_tests_restored(tmp_path: Path) -> None:
    task = make_task(tmp_path, "loose")
    tree = TaskTree(task)
    assert "if x < lo" not in tree.read_file("geom/ops.py")
    assert "def test_low" in tree.read_file("tests/test_ops.py")  # from the test patch
    assert "tests/test_ops.py" in tree.list_files()
    assert not any(p.startswith(".git/") for p in tree.list_files())
    with pytest.raises(FileNotFoundError):
        tree.read_file("nope.py")


def test_grade_run_and_apply_errors(tmp_path: Path, scorer: SandboxScorer) -> None:
    task = make_task(tmp_path, "loose")
    assert scorer.grade(task, "").reward == 0
    assert scorer.grade(task, task.gold_patch).reward == 1
    ran = scorer.run(task, "", "grep -c 'def test_low' tests/test_ops.py", timeout=30)
    assert ran.output.strip() == "1"  # graded tests restored for probes
    with pytest.raises(CuratePatchApplyError):
        scorer.grade(task, task.gold_patch.replace("return hi", "return HI"))
    other = attrs.evolve(make_task(tmp_path / "b", "good"))
    assert scorer.grade(other, other.gold_patch).reward == 1  # switching tasks switches sandboxes
    assert scorer.grades == 3


@pytest.mark.docker
def test_docker_backend_grades_like_the_namespace_backend(tmp_path: Path) -> None:
    from swe_sandbox import DockerBackend, SandboxError

    try:
        backend = DockerBackend()
    except SandboxError as exc:
        if os.environ.get("ARCTIC_REQUIRE_DOCKER") == "1":
            raise  # CI requires the engine: a broken Docker backend must fail, not skip
        pytest.skip(f"Docker backend unavailable: {exc}")
    task = make_task(tmp_path, "loose")
    with SandboxScorer(backend) as docker_scorer:
        assert docker_scorer.grade(task, "").reward == 0
        assert docker_scorer.grade(task, task.gold_patch).reward == 1


def test_a_sandbox_that_died_is_replaced_once(tmp_path: Path, scorer: SandboxScorer) -> None:
    task = make_task(tmp_path, "good")
    assert scorer.grade(task, "").reward == 0
    live = scorer._sandbox
    assert live is not None
    live.close()  # its init gone, as when something outside kills it
    assert scorer.grade(task, task.gold_patch).reward == 1
    assert scorer.replacements == 1
    assert scorer._sandbox is not live
