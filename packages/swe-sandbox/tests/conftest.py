"""Shared fixtures: the base rootfs (built once per machine), both backends, real tasks.

The Docker parameter carries the ``docker`` marker, so the workspace conftest skips it where no
engine answers — except in CI (``ARCTIC_REQUIRE_DOCKER=1``), where it must run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib keeps test directories off sys.path; the helpers live next to us.
sys.path.insert(0, str(Path(__file__).parent))

from sandbox_testkit.realproject import make_six_task
from sandbox_testkit.toyrepo import make_toy_task

from swe_sandbox import (
    Backend,
    DockerBackend,
    NamespaceBackend,
    TaskSpec,
    build_rootfs,
)


def _namespace_problem() -> str | None:
    if os.geteuid() != 0:
        return "the namespace backend needs root"
    return None


BACKENDS = [
    pytest.param("namespace", id="namespace"),
    pytest.param("docker", id="docker", marks=pytest.mark.docker),
]


@pytest.fixture(scope="session")
def rootfs() -> Path:
    """The cached debootstrap rootfs (a fresh machine builds it once: ~1-3 minutes)."""
    return build_rootfs()


@pytest.fixture(scope="session")
def namespace_backend(rootfs: Path) -> NamespaceBackend:
    if why := _namespace_problem():
        pytest.skip(why)
    return NamespaceBackend(rootfs=rootfs)


@pytest.fixture(scope="session")
def docker_backend(rootfs: Path) -> Iterator[DockerBackend]:
    backend = DockerBackend()
    backend.base_image()
    yield backend
    backend.reap_orphans()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    name = "namespace_backend" if request.param == "namespace" else "docker_backend"
    found: Backend = request.getfixturevalue(name)
    return found


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory: pytest.TempPathFactory) -> TaskSpec:
    return make_toy_task(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def six_task(tmp_path_factory: pytest.TempPathFactory, backend: Backend) -> TaskSpec:
    """`six` with F2P/P2P measured in the environment of the backend under test."""
    return make_six_task(tmp_path_factory.mktemp("six"), backend)
