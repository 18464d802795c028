"""Test wiring for swe-curate: shared helper modules and the real-sandbox scorer fixture."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
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


# inflection 0.5.1: a small pure-Python library whose sdist ships its pytest suite.
INFLECTION_SDIST = "https://files.pythonhosted.org/packages/e1/7e/691d061b7329bc8d54edbf0ec22fbfb2afe61facb681f9aaa9bff7a27d04/inflection-0.5.1.tar.gz"
INFLECTION_SHA256 = "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417"


@pytest.fixture(scope="session")
def inflection_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """inflection's published sdist, downloaded from PyPI (checked against its sha256)."""
    try:
        response = httpx.get(INFLECTION_SDIST, timeout=60, follow_redirects=True)
        data = response.raise_for_status().content
    except httpx.HTTPError as exc:
        pytest.skip(f"PyPI unreachable: {exc}")
    assert hashlib.sha256(data).hexdigest() == INFLECTION_SHA256
    path = tmp_path_factory.mktemp("sdist") / "inflection-0.5.1.tar.gz"
    path.write_bytes(data)
    return path


@pytest.fixture(scope="session")
def inflection_source(inflection_sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from swe_curate._inject import unpack_source

    return unpack_source(inflection_sdist, tmp_path_factory.mktemp("inflection") / "src")
