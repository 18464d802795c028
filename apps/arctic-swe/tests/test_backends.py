"""The sandbox backend by name: one table for the CLI, the config and the orchestrator."""

from __future__ import annotations

import pytest

from arctic_swe._backends import SANDBOX_BACKENDS, sandbox_backend
from arctic_swe.config import RunConfig, RunConfigError, apply_overrides, validate
from swe_sandbox import NamespaceBackend


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
