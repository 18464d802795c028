"""The swe-sandbox backend a run or a command names (``sandbox.backend``, ``--backend``).

One place for the orchestrator and the CLI, below both: neither imports the other for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swe_sandbox import Backend

#: The backends by name: daemon-less Linux namespaces (root) or a local Docker engine.
SANDBOX_BACKENDS: tuple[str, ...] = ("namespace", "docker")


def sandbox_backend(name: str) -> Backend:
    """The swe-sandbox backend called ``name`` (one of :data:`SANDBOX_BACKENDS`)."""
    # imported here: ``arctic-swe --help`` must not pay for the sandbox package
    from swe_sandbox import DockerBackend, NamespaceBackend

    if name not in SANDBOX_BACKENDS:
        raise ValueError(f"unknown sandbox backend {name!r}; one of {SANDBOX_BACKENDS}")
    return DockerBackend() if name == "docker" else NamespaceBackend()
