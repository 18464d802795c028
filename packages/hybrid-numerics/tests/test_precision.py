"""PrecisionPolicy keeps named parameters FP32 through forward, optimizer step and export."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hybrid_numerics import (
    PatchError,
    PrecisionPolicy,
    apply_precision_policy,
    patch_qwen3_5,
    precision_violations,
)

from .conftest import cache_kwargs, recurrent_state, tiny_qwen3_5_config


class _Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.A_log = nn.Parameter(torch.linspace(-4, 2.7, 8))
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return self.norm((h.float() * -self.A_log.float().exp()).to(x.dtype))


def test_named_parameters_stay_fp32_and_others_become_bf16() -> None:
    model = _Toy()
    A_log = model.A_log.detach().clone()
    kept = apply_precision_policy(model, PrecisionPolicy(fp32_patterns=("*A_log", "*norm.weight")))
    assert kept == ["A_log", "norm.weight"]
    assert model.A_log.dtype == torch.float32
    assert torch.equal(model.A_log, A_log)  # no round trip through bf16
    assert model.norm.weight.dtype == torch.float32
    assert model.proj.weight.dtype == model.norm.bias.dtype == torch.bfloat16


def test_fp32_survives_optimizer_steps_and_state_dict_export() -> None:
    model = _Toy()
    policy = PrecisionPolicy(fp32_patterns=("A_log",))
    apply_precision_policy(model, policy)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.98))
    before = model.A_log.detach().clone()
    for _ in range(3):
        model(torch.randn(4, 8, dtype=torch.bfloat16)).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    assert model.A_log.dtype == torch.float32
    # An update of ~1e-5 relative is representable in FP32 but would vanish in bf16.
    assert not torch.equal(model.A_log, before)
    assert torch.equal(model.A_log.bfloat16(), before.bfloat16())
    exported = model.state_dict()
    assert exported["A_log"].dtype == torch.float32
    assert precision_violations(model, policy) == []
    fresh = _Toy().to(torch.bfloat16)
    assert precision_violations(fresh, policy) == ["A_log: torch.bfloat16"]


def test_a_pattern_matching_nothing_is_an_error() -> None:
    with pytest.raises(PatchError, match="matches no parameter"):
        apply_precision_policy(_Toy(), PrecisionPolicy(fp32_patterns=("*A_lgo",)))


def test_bf16_qwen3_5_with_policy_runs_patched_forward_and_decode() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval()
    kept = apply_precision_policy(model)
    assert any(name.endswith("linear_attn.A_log") for name in kept)
    assert any(name.endswith("linear_attn.dt_bias") for name in kept)
    assert any(name.endswith("input_layernorm.weight") for name in kept)
    patch_qwen3_5(model)
    ids = torch.randint(0, 96, (1, 12))
    with torch.no_grad():
        logits = model(ids, use_cache=False).logits
        cache = transformers.DynamicCache(config=model.config)
        model(ids[:, :11], use_cache=True, **cache_kwargs(model, cache))
        step = model(ids[:, 11:], use_cache=True, **cache_kwargs(model, cache)).logits
    assert logits.dtype == torch.bfloat16
    assert torch.isfinite(logits.float()).all()
    assert recurrent_state(cache, 0).dtype == torch.float32
    torch.testing.assert_close(step[:, -1].float(), logits[:, -1].float(), atol=0.1, rtol=0.05)
