"""``VllmNcclSender`` where vLLM is missing: the module imports, constructing a sender is a
clear ``ImportError`` (its behaviour with vLLM: integration_tests/vllm_conformance)."""

from __future__ import annotations

import importlib.util

import pytest

from arctic_swe.transfer import _vllm_sender
from arctic_swe.transfer._vllm_sender import VllmNcclSender, VllmUnavailableError


def test_without_vllm_construction_is_an_import_error_naming_the_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        _vllm_sender.importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "vllm" else real(name, *rest),
    )
    with pytest.raises(VllmUnavailableError, match="LocalWeightSender") as caught:
        VllmNcclSender(lambda version: [])
    assert isinstance(caught.value, ImportError)
