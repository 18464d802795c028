"""Test wiring for swe-curate: shared helper modules and the real-sandbox scorer fixture."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib keeps test folders off sys.path; the helpers have package-unique names
# (``curate_*``) so adding this folder cannot shadow another member's modules.
sys.path.insert(0, str(Path(__file__).parent))

from swe_curate._scorer import SandboxScorer
from swe_sandbox import NamespaceBackend, SandboxError


@pytest.fixture(scope="session")
def namespace_backend() -> NamespaceBackend:
    """swe-sandbox's daemon-less backend (root + a built rootfs); skip where it cannot run."""
    backend = NamespaceBackend()
    try:
        backend.check()
        _ = backend.rootfs  # builds (or reuses) the cached Debian root filesystem
    except SandboxError as exc:
        pytest.skip(f"namespace sandbox unavailable: {exc}")
    return backend


@pytest.fixture
def scorer(namespace_backend: NamespaceBackend) -> Iterator[SandboxScorer]:
    with SandboxScorer(namespace_backend) as live:
        yield live
