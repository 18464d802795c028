"""The feature checks that let the Qwen3.5 patch follow transformers' changing layer layout."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch

from hybrid_numerics import PatchError, gdn_layers, patch_qwen3_5
from hybrid_numerics._qwen3_5_compat import (
    cache_keyword,
    check_no_intermediate_states,
    check_supported,
)

from .conftest import tiny_qwen3_5_config

transformers = pytest.importorskip("transformers")


def _tiny_model() -> Any:
    torch.manual_seed(0)
    return transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval()


def test_the_installed_transformers_layout_is_recognised() -> None:
    model = _tiny_model()
    for _, layer in gdn_layers(model):
        check_supported(layer)  # raises on a layout the patch does not know
    assert cache_keyword(model) in {"cache", "past_key_values"}


def test_a_module_without_the_conv_helpers_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # transformers 5.2 - 5.14 kept the conv kernels on the layer instance, not in the module.
    model = _tiny_model()
    module = sys.modules[type(gdn_layers(model)[0][1]).__module__]
    monkeypatch.delattr(module, "causal_conv1d_update")
    with pytest.raises(PatchError, match="missing causal_conv1d_update"):
        patch_qwen3_5(model)


class _RecordingCache:
    """A cache in assisted decoding that wants the last ``keep`` recurrent states."""

    def __init__(self, keep: int) -> None:
        self.keep = keep

    def get_recurrent_states_to_keep(self, layer_idx: int) -> int:
        return self.keep


def test_a_cache_asking_for_intermediate_states_is_refused() -> None:
    check_no_intermediate_states(None, 0)
    check_no_intermediate_states(_RecordingCache(0), 0)
    with pytest.raises(PatchError, match="intermediate recurrent states"):
        check_no_intermediate_states(_RecordingCache(2), 0)


def test_the_cache_keyword_follows_the_forward_signature() -> None:
    class NewStyle:
        def forward(self, input_ids: Any = None, cache: Any = None) -> None: ...

    class OldStyle:
        def forward(self, input_ids: Any = None, past_key_values: Any = None) -> None: ...

    assert cache_keyword(NewStyle()) == "cache"
    assert cache_keyword(OldStyle()) == "past_key_values"
