"""The sandbox backend by name: swe-sandbox's registry, read by the CLI, the config and the
orchestrator."""

from __future__ import annotations

import pytest

from arctic_swe._backends import SANDBOX_BACKENDS, sandbox_backend
from arctic_swe.config import RunConfig, RunConfigError, apply_overrides, validate
from swe_sandbox import NamespaceBackend, backend_names


def test_namespace_is_the_daemon_less_backend() -> None:
    assert isinstance(sandbox_backend("namespace"), NamespaceBackend)


def test_an_unknown_name_is_refused_not_replaced_by_a_default() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend 'podman'"):
        sandbox_backend("podman")


def test_the_config_accepts_exactly_the_backends_there_are() -> None:
    for name in SANDBOX_BACKENDS:
        validate(apply_overrides(RunConfig(), [f"sandbox.backend={name}"]))
    with pytest.raises(RunConfigError, match=r"sandbox\.backend"):
        validate(apply_overrides(RunConfig(), ["sandbox.backend=podman"]))


def test_the_names_are_swe_sandboxs_registry_read_when_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backend another package registers is a choice, a config value and a constructor here
    with no change to the app; the view is read at each use, not copied at import."""
    import swe_sandbox._registry as registry

    class OtherBackend(NamespaceBackend):
        name = "other"

    assert "other" not in SANDBOX_BACKENDS
    monkeypatch.setattr(registry, "_factories", {**registry._factories, "other": OtherBackend})
    assert tuple(SANDBOX_BACKENDS) == backend_names() == ("namespace", "docker", "other")
    assert repr(SANDBOX_BACKENDS) == "('namespace', 'docker', 'other')"
    assert isinstance(sandbox_backend("other"), OtherBackend)
    validate(apply_overrides(RunConfig(), ["sandbox.backend=other"]))
