"""The FP32 decode plan: what it derives from the weights equals what the modules compute, it
is rebuilt exactly when a weight changes, and only an all-FP32 model gets one."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from arctic_swe.engine._plan import AttnLayer, GdnLayer, Norm, decode_plan
from arctic_swe.model import set_compute_dtype

from .conftest import tiny_model


def _scale(norm: Norm, x: torch.Tensor) -> torch.Tensor:
    """The plan's norm (the gain lives in the next matrix), written out in float64."""
    x = x.double()
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + float(norm.eps))


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    assert torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-6)


def test_folded_gdn_projection_equals_the_modules() -> None:
    model = tiny_model(seed=2)
    plan = decode_plan(model, 8)
    assert plan is not None
    layer = plan.layers[0]
    assert isinstance(layer, GdnLayer)
    decoder: Any = model.model.layers[0]
    mod = decoder.linear_attn
    x = torch.randn(5, model.config.hidden_size)
    normed = decoder.input_layernorm(x)  # the model's own RMSNorm with gain 1 + w
    want = torch.cat([mod.in_proj_qkv(normed), mod.in_proj_z(normed), mod.in_proj_b(normed),
                      mod.in_proj_a(normed)], dim=-1)  # fmt: skip
    _close(_scale(layer.norm, x) @ layer.in_proj.double().t(), want)
    taps = mod.conv1d.weight[:, 0, :].t()  # [kernel, channels]
    assert torch.equal(layer.taps, taps)


def test_folded_attention_rows_are_query_key_gate_value() -> None:
    model = tiny_model(seed=3)
    plan = decode_plan(model, 8)
    assert plan is not None
    layer = next(layer for layer in plan.layers if isinstance(layer, AttnLayer))
    decoder: Any = model.model.layers[layer.index]
    attn = decoder.self_attn
    heads_q, _, dim = layer.heads
    x = torch.randn(4, model.config.hidden_size)
    normed = decoder.input_layernorm(x)
    query_gate = attn.q_proj(normed).view(4, heads_q, 2 * dim)
    want = torch.cat([
        query_gate[..., :dim].reshape(4, -1), attn.k_proj(normed),
        query_gate[..., dim:].reshape(4, -1), attn.v_proj(normed),
    ], dim=-1)  # fmt: skip
    _close(_scale(layer.norm, x) @ layer.qkgv.double().t(), want)


def test_mlp_and_lm_head_fold_their_norm_gains() -> None:
    model = tiny_model(seed=4)
    plan = decode_plan(model, 8)
    assert plan is not None
    decoder: Any = model.model.layers[1]
    x = torch.randn(3, model.config.hidden_size)
    mlp = plan.layers[1].mlp
    gate_up = _scale(mlp.norm, x) @ mlp.gate_up.double().t()
    normed = decoder.post_attention_layernorm(x)
    _close(gate_up, torch.cat([decoder.mlp.gate_proj(normed), decoder.mlp.up_proj(normed)], -1))
    logits = _scale(plan.final, x) @ plan.lm_head.double().t()
    _close(logits, model.lm_head(model.model.norm(x)))


def test_rope_rows_are_the_models_own_with_the_rotate_half_sign() -> None:
    model = tiny_model()
    plan = decode_plan(model, 40)
    assert plan is not None
    assert plan.rope is not None
    positions = torch.arange(plan.rope.length)[None]
    cos, sin = model.model.rotary_emb(torch.zeros(1), positions)
    half = plan.rope.dim // 2
    assert torch.equal(plan.rope.cos, cos[0])
    assert torch.equal(plan.rope.sin[:, :half], -sin[0, :, :half])
    assert torch.equal(plan.rope.sin[:, half:], sin[0, :, half:])
    x = torch.randn(plan.rope.dim)  # x[swap] * signed sin == rotate_half(x) * sin
    rotated = torch.cat([-x[half:], x[:half]])
    assert torch.equal(x[plan.rope.swap] * plan.rope.sin[7], rotated * sin[0, 7])


def test_rope_tables_grow_with_the_context() -> None:
    model = tiny_model()
    first = decode_plan(model, 10)
    assert first is not None
    assert first.rope is not None
    assert first.rope.length == 256
    longer = decode_plan(model, 600)
    assert longer is not None
    assert longer.rope is not None
    assert longer.rope.length == 1024
    assert longer.layers is first.layers  # the weights did not change: only RoPE was extended


def test_the_plan_is_reused_until_a_weight_is_written_or_replaced() -> None:
    model = tiny_model(seed=5)
    plan = decode_plan(model, 8)
    assert decode_plan(model, 8) is plan
    decoder: Any = model.model.layers[2]
    with torch.no_grad():
        decoder.mlp.up_proj.weight.mul_(2.0)  # an optimizer step or a refresh: in place
    written = decode_plan(model, 8)
    assert written is not plan
    assert written is not None
    assert torch.equal(written.layers[2].mlp.gate_up[decoder.mlp.gate_proj.weight.shape[0] :],
                       decoder.mlp.up_proj.weight * (1 + decoder.post_attention_layernorm.weight))  # fmt: skip
    mod = decoder.linear_attn
    mod.A_log = nn.Parameter(mod.A_log.detach() + 1.0)  # a new tensor object
    replaced = decode_plan(model, 8)
    assert replaced is not written
    assert replaced is not None
    layer = replaced.layers[2]
    assert isinstance(layer, GdnLayer)
    assert layer.A_log is not None
    assert torch.equal(layer.A_log, mod.A_log)


def test_only_an_all_fp32_model_gets_a_plan() -> None:
    model = tiny_model()
    assert decode_plan(model, 8) is not None
    set_compute_dtype(model, torch.bfloat16)
    assert decode_plan(model, 8) is None


def test_a_plan_built_in_inference_mode_holds_normal_tensors() -> None:
    """The engine steps under inference mode; the plan outlives the step and a trainer may
    share the process, so nothing in it may be an inference tensor."""
    model = tiny_model(seed=6)
    with torch.inference_mode():
        plan = decode_plan(model, 8)
    assert plan is not None
    tensors = [plan.embed, plan.lm_head, plan.final.eps]
    for layer in plan.layers:
        tensors += [layer.mlp.gate_up, layer.mlp.down_t, layer.norm.eps]
        if isinstance(layer, GdnLayer):
            tensors += [layer.in_proj, layer.taps, layer.out_t]
        else:
            tensors += [layer.qkgv, layer.qk_gain, layer.o_t]
    assert not any(t.is_inference() for t in tensors)


@pytest.mark.parametrize("attribute", ["norm.weight", "lm_head.weight"])
def test_final_norm_and_head_changes_reach_the_plan(attribute: str) -> None:
    model = tiny_model(seed=7)
    before = decode_plan(model, 8)
    assert before is not None
    target = model.model.norm.weight if attribute == "norm.weight" else model.lm_head.weight
    with torch.no_grad():
        target.add_(0.5)
    after = decode_plan(model, 8)
    assert after is not None
    assert not torch.equal(after.lm_head, before.lm_head)
