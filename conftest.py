"""Workspace-wide pytest wiring: the hypothesis CI profile and the `gpu` / `docker` markers.

This file must import in every member's stand-alone environment, so it uses only the standard
library and imports optional packages (hypothesis, torch) lazily.
"""

from __future__ import annotations

import http.client
import os
import socket
from functools import cache
from urllib.parse import urlparse

import pytest

try:  # every member's dev group has hypothesis, but the root conftest must not depend on it
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - only in environments without hypothesis
    settings = None
else:
    # Derandomized and bounded in CI so a red run is reproducible and the suite time is predictable.
    settings.register_profile(
        "ci",
        derandomize=True,
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
    )
    settings.register_profile("dev", max_examples=100, deadline=None)
    settings.load_profile("ci" if os.environ.get("CI") else "dev")


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: the Docker engine's native transport, with nothing but stdlib."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._socket_path)
        self.sock = sock


@cache
def docker_engine_problem() -> str | None:
    """Return why no Docker engine answers ``GET /_ping``, or ``None`` when one does."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    parsed = urlparse(host)
    try:
        if parsed.scheme == "unix":
            conn: http.client.HTTPConnection = _UnixHTTPConnection(parsed.path, timeout=5.0)
        elif parsed.scheme in {"tcp", "http"}:
            conn = http.client.HTTPConnection(
                parsed.hostname or "", parsed.port or 2375, timeout=5.0
            )
        else:
            return f"unsupported DOCKER_HOST scheme {parsed.scheme!r}"
        conn.request("GET", "/_ping")
        response = conn.getresponse()
        body = response.read().decode(errors="replace").strip()
        conn.close()
    except OSError as exc:
        return f"no Docker engine at {host}: {exc}"
    if response.status != 200 or body != "OK":
        return f"Docker engine at {host} answered {response.status} {body!r}"
    return None


@cache
def cuda_problem() -> str | None:
    """Return why CUDA is unusable here, or ``None`` when a device is present."""
    try:
        import torch
    except ImportError:
        return "torch is not installed in this environment"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    require_docker = os.environ.get("ARCTIC_REQUIRE_DOCKER") == "1"
    for item in items:
        if item.get_closest_marker("gpu") is not None and (why := cuda_problem()):
            item.add_marker(pytest.mark.skip(reason=why))
        # With ARCTIC_REQUIRE_DOCKER=1 nothing is skipped: a missing engine then fails the test
        # itself in `pytest_runtest_setup`, so CI cannot go green by skipping.
        wants_docker = item.get_closest_marker("docker") is not None
        if wants_docker and not require_docker and (why := docker_engine_problem()):
            item.add_marker(pytest.mark.skip(reason=why))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None and (why := docker_engine_problem()):
        pytest.fail(f"Docker engine required (ARCTIC_REQUIRE_DOCKER=1) but unavailable: {why}")
