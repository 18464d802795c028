"""``EngineConfig.compute_dtype``: the "FP32 numerics off" engine computes in bf16 and its
recorded log-probs measurably disagree with the FP32 trainer's, while the FP32 engine agrees
(Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Sequence

import pytest
import torch
from transformers import Qwen3_5ForCausalLM

from arctic_swe.engine import EngineConfig, EngineError, Generation, TorchEngine
from arctic_swe.model import PolicyError, build_policy, policy_config, set_compute_dtype
from load_router import GenerateRequest

from .conftest import full_logprobs, perturbed

PROMPT = tuple(range(1, 90))


def _generate(model: torch.nn.Module, config: EngineConfig, tokens: int = 48) -> Generation:
    async def scenario() -> Generation:
        engine = TorchEngine(model, config)
        try:
            request = GenerateRequest(
                rollout_index=0, prompt_ids=PROMPT, max_new_tokens=tokens, seed=11
            )
            return await engine.generate_detailed(request)
        finally:
            await engine.close()

    return asyncio.run(scenario())


def mismatch_kl(trainer: torch.nn.Module, turn: Generation) -> float:
    """mean(ω - log ω - 1) over the turn's tokens, ω = π_trainer / π_engine (float64), as the
    trainer's ``mismatch_kl`` metric computes it."""
    tokens: Sequence[int] = PROMPT + turn.token_ids
    log_ratio = full_logprobs(trainer, tokens, len(PROMPT)) - torch.tensor(
        turn.logprobs, dtype=torch.float64
    )
    return float((log_ratio.exp() - log_ratio - 1).mean())


def test_bf16_compute_casts_the_engine_model_but_keeps_fp32_masters(
    model: Qwen3_5ForCausalLM,
) -> None:
    copied = copy.deepcopy(model)
    engine = TorchEngine(copied, EngineConfig(compute_dtype=torch.bfloat16))
    assert engine.compute_dtype == torch.bfloat16
    layer = copied.model.layers[0]
    assert layer.linear_attn.in_proj_qkv.weight.dtype == torch.bfloat16
    assert layer.linear_attn.A_log.dtype == torch.float32  # hybrid-numerics' FP32 names
    assert layer.input_layernorm.weight.dtype == torch.float32
    assert TorchEngine(copy.deepcopy(model)).compute_dtype == torch.float32  # default: as given
    assert model.model.embed_tokens.weight.dtype == torch.float32  # the original is untouched


def test_the_ablated_engine_disagrees_with_the_fp32_trainer() -> None:
    """Same prompt, same sampling seed: the FP32 engine's log-probs match the FP32 trainer's
    full forward (KL at rounding level), the bf16 engine's do not (KL orders of magnitude up).

    The policy is a plain random init (a broad next-token distribution, as early in RL): on the
    sharpened fixture policy the sampled tokens have p ≈ 1 and any rounding hides in log 1."""
    model = build_policy(policy_config(512), seed=0)
    recipe = _generate(copy.deepcopy(model), EngineConfig(capacity=2))
    ablated_config = EngineConfig(
        capacity=2, compute_dtype=torch.bfloat16, state_dtype=torch.bfloat16
    )
    ablated = _generate(copy.deepcopy(model), ablated_config)
    kl_recipe, kl_ablated = mismatch_kl(model, recipe), mismatch_kl(model, ablated)
    print(f"mismatch KL: FP32 engine {kl_recipe:.2e}, bf16 engine {kl_ablated:.2e}")
    assert kl_recipe < 1e-9, kl_recipe
    assert kl_ablated > 1e-7, kl_ablated
    assert kl_ablated > 1e3 * max(kl_recipe, 1e-15)


def test_a_refresh_rounds_fp32_weights_into_the_bf16_engine(model: Qwen3_5ForCausalLM) -> None:
    async def scenario() -> torch.dtype:
        engine = TorchEngine(copy.deepcopy(model), EngineConfig(compute_dtype=torch.bfloat16))
        await engine.refresh_weights(perturbed(model, seed=1), version=1)
        dtype = engine.compute_dtype
        await engine.close()
        return dtype

    assert asyncio.run(scenario()) == torch.bfloat16


def test_bad_compute_dtypes_are_refused(model: Qwen3_5ForCausalLM) -> None:
    with pytest.raises(EngineError, match="compute_dtype"):
        EngineConfig(compute_dtype=torch.int8)
    half = copy.deepcopy(model)
    set_compute_dtype(half, torch.bfloat16)
    with pytest.raises(EngineError, match="start from FP32"):
        TorchEngine(half, EngineConfig(engine_id="refused", compute_dtype=torch.float16))
    # The cast runs on the engine's own thread; a refused engine leaves no thread behind.
    assert not any(t.name.startswith("engine-refused") for t in threading.enumerate())
    with pytest.raises(PolicyError, match="compute dtype"):
        set_compute_dtype(half, torch.float64)
