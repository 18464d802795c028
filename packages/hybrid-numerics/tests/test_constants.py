"""Cached constants built during an inference-mode call stay usable by a later autograd call
(an engine under ``torch.inference_mode()`` and a trainer share one process)."""

from __future__ import annotations

import pytest
import torch

from hybrid_numerics import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from hybrid_numerics._chunk_torch import _row_scale as chunk_row_scale
from hybrid_numerics._chunk_torch_ops import _straddle_matrix, _upper_minus_inf
from hybrid_numerics._constants import constant_cache
from hybrid_numerics._recurrent_torch import _row_scale as recurrent_row_scale

from .conftest import make_gdn_inputs

CACHED = [chunk_row_scale, recurrent_row_scale, _straddle_matrix, _upper_minus_inf]


@pytest.fixture(autouse=True)
def empty_caches() -> None:
    """Every cache starts empty, so the first call below is the one that fills it."""
    for cached in CACHED:
        cached.cache_clear()  # type: ignore[attr-defined]


def test_a_plain_lru_cache_would_be_poisoned() -> None:
    """The failure this module prevents, shown on a plain cache: a value first built under
    inference mode cannot be saved for backward."""
    import functools

    @functools.lru_cache(maxsize=1)
    def plain() -> torch.Tensor:
        return torch.ones(2)

    with torch.inference_mode():
        plain()
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"[Ii]nference tensors"):
        (x * plain()).sum().backward()


def test_constant_cache_builds_normal_tensors_under_inference_mode() -> None:
    @constant_cache(maxsize=1)
    def built() -> torch.Tensor:
        return torch.ones(2)

    with torch.inference_mode():
        first = built()
    assert not first.is_inference()
    assert built() is first  # cached
    x = torch.ones(2, requires_grad=True)
    (x * built()).sum().backward()
    assert x.grad is not None


def test_a_decode_and_prefill_under_inference_mode_then_a_training_backward() -> None:
    x = make_gdn_inputs(2, 70, 2, 4, 16, 8, seed=5).cast(torch.float32)
    cache = torch.zeros(2, 4, 16, 8)
    slots = torch.arange(2)
    prompt = [t[:, :69].contiguous() for t in (x.q, x.k, x.v, x.g, x.beta)]
    token = [t[:, 69:].contiguous() for t in (x.q, x.k, x.v, x.g, x.beta)]
    with torch.inference_mode():  # the engine: prefill (chunk path) then one decode token
        chunk_gated_delta_rule(*prompt, state_cache=cache, state_indices=slots, use_qk_l2norm=True)
        fused_recurrent_gated_delta_rule(
            *token, state_cache=cache, state_indices=slots, use_qk_l2norm=True
        )
    assert all(cached.cache_info().currsize for cached in CACHED[:2])  # type: ignore[attr-defined]
    y = x.cast(torch.float32, requires_grad=True)  # the trainer: autograd through both paths
    o, _ = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, use_qk_l2norm=True)
    o2, _ = fused_recurrent_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, use_qk_l2norm=True)
    (o.sum() + o2.sum()).backward()
    assert y.q.grad is not None
    assert torch.isfinite(y.q.grad).all()
