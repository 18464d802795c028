"""mismatch_audit on a tiny random Qwen3.5: decode path vs full forward, and the paper's story."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from hybrid_numerics import (
    PatchError,
    apply_precision_policy,
    k3_mismatch,
    mismatch_audit,
    patch_qwen3_5,
)

from .conftest import tiny_qwen3_5_config

transformers = pytest.importorskip("transformers")


def _perturbed(model: Any, scale: float, seed: int) -> dict[str, torch.Tensor]:
    """A weight change like one optimizer step: small relative noise on every matrix."""
    gen = torch.Generator().manual_seed(seed)
    new = {}
    for name, t in model.state_dict().items():
        noise = (
            torch.randn(t.shape, generator=gen).to(t.dtype) * scale * t.float().std().to(t.dtype)
        )
        new[name] = t + noise if t.dim() == 2 else t
    return new


def test_k3_is_zero_for_equal_logprobs_and_quadratic_for_small_gaps() -> None:
    lp = torch.log(torch.tensor([0.5, 0.25]))
    assert torch.equal(k3_mismatch(lp, lp), torch.zeros(2, dtype=torch.float64))
    gap = torch.tensor([1e-5])
    value = k3_mismatch(gap, torch.zeros(1)).item()
    assert value == pytest.approx(0.5e-10, rel=1e-4)  # d^2/2, not lost to cancellation


@torch.no_grad()
def test_bf16_model_audit_tells_the_papers_story() -> None:
    torch.manual_seed(0)
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval()
    apply_precision_policy(model)
    patch_qwen3_5(model)
    ids = torch.randint(0, 96, (2, 40), generator=torch.Generator().manual_seed(4))
    before = copy.deepcopy(model.state_dict())
    report = mismatch_audit(model, ids, prompt_len=4, new_state_dict=_perturbed(model, 0.05, 5))
    assert report.per_token.shape == (2, 36)
    assert len(report.by_position) == 36
    assert set(report.by_layer_type) == {"linear_attention", "full_attention"}
    assert report.overall == pytest.approx(float(report.per_token.mean()))
    assert 0 <= report.overall < 1e-3
    # FP32 state cache is closer to the trainer than the bf16-rounded one.
    assert report.bf16_state is not None
    assert report.bf16_state > report.overall
    # A stale cache after a weight change shifts the distribution far more than re-prefilling.
    assert report.stale_cache is not None
    assert report.recomputed_cache is not None
    assert report.stale_cache > 5 * report.recomputed_cache
    assert report.as_dict()["refresh_at"] == 20
    for name, t in model.state_dict().items():  # the audit restored the weights
        assert torch.equal(t, before[name]), name


@torch.no_grad()
def test_fp32_model_paths_agree_to_rounding() -> None:
    torch.manual_seed(1)
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval()
    patch_qwen3_5(model)
    ids = torch.randint(0, 96, (1, 30), generator=torch.Generator().manual_seed(6))
    report = mismatch_audit(model, ids, prompt_len=3, compare_bf16_state=False)
    assert report.overall < 1e-10
    assert max(report.by_layer_type.values()) < 1e-10
    assert report.bf16_state is None
    assert report.stale_cache is None


def test_audit_rejects_unpatched_models_and_bad_ids() -> None:
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config()).eval()
    with pytest.raises(PatchError, match="patched"):
        mismatch_audit(model, torch.zeros(1, 5, dtype=torch.long))
    patch_qwen3_5(model)
    with pytest.raises(PatchError, match="integer"):
        mismatch_audit(model, torch.zeros(1, 5))
    with pytest.raises(PatchError, match="prompt_len"):
        mismatch_audit(model, torch.zeros(1, 5, dtype=torch.long), prompt_len=5)
