"""Per-task Docker layers built locally, and the CLI that builds them (Docker only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_sandbox import DockerBackend, Sandbox, TaskSpec, build_task_image, task_image_tag
from swe_sandbox._cli import main, task_to_json
from swe_sandbox._docker_backend import has_task_repo

pytestmark = pytest.mark.docker


def test_task_image_carries_only_the_agent_tree(
    docker_backend: DockerBackend, toy_task: TaskSpec
) -> None:
    tag = build_task_image(toy_task, client=docker_backend.client)
    assert tag == task_image_tag(toy_task)
    assert has_task_repo(docker_backend.client, tag)
    assert build_task_image(toy_task, client=docker_backend.client) == tag  # cached
    with Sandbox.create(toy_task, docker_backend, image=tag) as sandbox:
        listing = sandbox.execute_bash("ls /opt/swe-task/repo/tests; git log --all --oneline")
        assert "test_add.py" not in listing.output
        assert len(listing.output.strip().splitlines()) == 2  # test_core.py + one commit
        assert sandbox.grade().reward == 0
        sandbox.apply_patch(toy_task.gold_patch)
        assert sandbox.grade().reward == 1


def test_cli_builds_the_task_image(
    docker_backend: DockerBackend,
    toy_task: TaskSpec,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "task.json"
    path.write_text(json.dumps(task_to_json(toy_task)))
    assert main(["image", "build", str(path)]) == 0
    built = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert built["image"] == task_image_tag(toy_task)
    assert main(["grade", str(path), "--backend", "docker", "--patch", "gold"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["reward"] == 1
