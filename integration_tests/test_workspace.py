"""Workspace-level checks that hold the foundation together: every member is installed from the
workspace, and the Docker engine that the `docker` marker relies on really answers."""

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMBER_PYPROJECTS = sorted(
    [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")]
)


@pytest.mark.parametrize("pyproject", MEMBER_PYPROJECTS, ids=lambda p: p.parent.name)
def test_member_installed_at_its_declared_version(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text())["project"]
    assert version(project["name"]) == project["version"]


def test_console_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arctic_swe._cli", "components"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "swe-sandbox" in done.stdout


@pytest.mark.docker
def test_docker_engine_answers_through_the_sdk() -> None:
    # The root conftest pings the engine over the raw socket; this checks the SDK that
    # swe-sandbox uses reaches the same engine.
    import docker

    client = docker.from_env()
    assert client.ping()
    info = client.version()
    assert info["ApiVersion"]
