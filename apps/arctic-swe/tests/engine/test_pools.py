"""Cache pools: shapes, FP32 recurrent state, growth and reset."""

from __future__ import annotations

import torch

from arctic_swe.engine import CachePools, batched_forward
from arctic_swe.model import policy_config

from .conftest import VOCAB, full_logprobs, tiny_model


def test_pools_have_one_entry_per_layer_kind_and_fp32_state() -> None:
    config = policy_config(64)
    pools = CachePools(config, 5, torch.device("cpu"), torch.float32)
    assert sorted(pools.recurrent) == [0, 1, 2]
    assert sorted(pools.keys) == [3]
    assert pools.recurrent[0].shape == (5, 4, 32, 32)
    assert pools.recurrent[0].dtype == torch.float32
    assert pools.conv[0].shape == (5, 3, 2 * 2 * 32 + 4 * 32)  # [S, K-1, C]: channels last
    bf16 = CachePools(config, 2, torch.device("cpu"), torch.bfloat16)
    assert bf16.recurrent[1].dtype == torch.float32  # FP32 wherever the state lives
    assert bf16.keys[3].dtype == torch.bfloat16


def test_growth_keeps_cached_positions_and_reset_clears_only_named_slots() -> None:
    pools = CachePools(policy_config(64), 3, torch.device("cpu"), torch.float32)
    start = pools.kv_length
    pools.keys[3][:, :, :start] = torch.randn_like(pools.keys[3])
    saved = pools.keys[3].clone()
    pools.ensure_length(start + 1)
    assert pools.kv_length == 2 * start
    assert torch.equal(pools.keys[3][:, :, :start], saved)
    pools.ensure_length(10)
    assert pools.kv_length == 2 * start  # never shrinks
    for tensor in (*pools.conv.values(), *pools.recurrent.values()):
        tensor.fill_(1.0)
    pools.reset([0, 2])
    assert pools.recurrent[0][[0, 2]].abs().sum() == 0
    assert pools.conv[2][[0, 2]].abs().sum() == 0
    assert (pools.recurrent[0][1] == 1).all()
    assert pools.nbytes() > 0


def test_bf16_state_storage_is_the_ablation_and_fp32_is_exact() -> None:
    """``state_dtype=bfloat16`` rounds each stored recurrent state (the "FP32 numerics off"
    ablation): decoding then drifts from the FP32 full forward, while FP32 storage does not."""
    model = tiny_model()
    tokens = torch.randint(0, VOCAB, (40,), generator=torch.Generator().manual_seed(3)).tolist()
    reference = full_logprobs(model, tokens, 1)
    errors = {}
    for dtype in (torch.float32, torch.bfloat16):
        pools = CachePools(model.config, 2, torch.device("cpu"), torch.float32, dtype)
        rows = [batched_forward(model, pools, [1], [tokens[:1]], [0])[0]]
        for t in range(1, len(tokens) - 1):
            rows.append(batched_forward(model, pools, [1], [[tokens[t]]], [t])[0])
        logprobs = torch.log_softmax(torch.stack(rows).double(), -1)
        picked = logprobs.gather(1, torch.tensor(tokens[1:])[:, None])[:, 0]
        errors[dtype] = float((picked - reference).abs().max())
        stored = pools.recurrent[0][1]
        assert stored.dtype == torch.float32
        if dtype == torch.bfloat16:
            assert torch.equal(stored, stored.to(torch.bfloat16).float())
    assert errors[torch.float32] < 1e-5
    assert errors[torch.bfloat16] > 10 * max(errors[torch.float32], 1e-7)
