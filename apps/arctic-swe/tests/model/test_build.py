"""Seeded construction of the policy."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.model import (
    PolicyConfigError,
    PolicyError,
    build_policy,
    install_numerics,
    numerics_installed,
    policy_config,
)


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_same_seed_same_weights_other_seed_other_weights() -> None:
    config = policy_config(64)
    first = build_policy(config, 3, patch_numerics=False)
    assert isinstance(first, Qwen3_5ForCausalLM)
    assert _same_weights(first, build_policy(config, 3, patch_numerics=False))
    assert not _same_weights(first, build_policy(config, 4, patch_numerics=False))


def test_policy_is_fp32_eval_mode_and_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    model = build_policy(policy_config(64), 0, patch_numerics=False)
    assert torch.equal(torch.rand(3), expected)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert not model.training


def test_forward_gives_finite_logits_over_the_vocabulary() -> None:
    model = build_policy(policy_config(64), 0, patch_numerics=False)
    with torch.no_grad():
        logits = model(torch.arange(10)[None]).logits
    assert logits.shape == (1, 10, 64)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_bad_seed_is_rejected(seed: object) -> None:
    with pytest.raises(PolicyConfigError, match="seed"):
        build_policy(policy_config(64), seed)  # type: ignore[arg-type]


def test_bad_config_is_rejected() -> None:
    with pytest.raises(PolicyConfigError, match="Qwen3_5TextConfig"):
        build_policy({"vocab_size": 64}, 0)  # type: ignore[arg-type]


def test_numerics_are_installed_by_default_and_everything_stays_fp32() -> None:
    model = build_policy(policy_config(64), 0)
    assert numerics_installed(model)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert not numerics_installed(build_policy(policy_config(64), 0, patch_numerics=False))
    stock = build_policy(policy_config(64), 0, patch_numerics=False)
    tokens = torch.arange(12)[None]
    with torch.no_grad():
        patched_logits, stock_logits = model(tokens).logits, stock(tokens).logits
    assert torch.allclose(patched_logits, stock_logits, atol=1e-4)  # same model, FP32 kernels


def test_bf16_compute_keeps_fp32_masters() -> None:
    model = build_policy(policy_config(64), 0, compute_dtype=torch.bfloat16)
    dtypes = {name: p.dtype for name, p in model.named_parameters()}
    assert dtypes["model.layers.0.linear_attn.A_log"] == torch.float32
    assert dtypes["model.layers.0.linear_attn.dt_bias"] == torch.float32
    assert dtypes["model.layers.0.linear_attn.in_proj_qkv.weight"] == torch.bfloat16


def test_installing_into_a_model_without_gated_deltanet_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="hybrid-numerics"):
        install_numerics(torch.nn.Linear(3, 3))
