"""The rollout-trainer mismatch split by layer type, measured during a run (Arctic-SWE §3.3).

hybrid-numerics' :func:`~hybrid_numerics.mismatch_audit` scores the same tokens through the
engine's path (prefill, then one token at a time from the cache) and the trainer's (one full
forward), and attributes the gap to the Gated DeltaNet layers (``linear_attention``: only they
take their token-by-token recurrence) and to softmax attention (``full_attention``: only it
decodes from its KV cache). The run calls it on a small fixed window of one trained rollout
every ``metrics.kl_by_layer_every`` updates, on the trainer's own model: the engines are deep
copies of it, so its patched recurrent-state dtype *is* the engines' setting (bf16 under
``trainer.fp32_numerics = false``) and the audit measures the numerics the run actually uses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from arctic_swe.trainer._samples import TrainSample
from hybrid_numerics import mismatch_audit

#: Tokens scored per audit (after the rollout's prompt): the audit's engine path decodes them
#: one at a time, three times over, so its cost grows with this (README, measured cost).
AUDIT_TOKENS = 256


@dataclass(frozen=True)
class LayerTypeKL:
    """One audit: mean ``ω - log ω - 1`` over the scored tokens, overall and by layer type."""

    overall: float  # engine path (the run's state dtype) vs trainer path
    linear_attention: float  # only the Gated DeltaNet layers take their decode path
    full_attention: float  # only softmax attention decodes from its cache
    tokens: int  # tokens scored
    seconds: float  # wall time of the audit


def audit_window(sample: TrainSample, max_tokens: int = AUDIT_TOKENS) -> tuple[torch.Tensor, int]:
    """The audited tokens of ``sample``: ``([1, T] ids, prompt_len)`` — its first generated
    token's context as the prefill (the prompt, as an engine prefills it) and at most
    ``max_tokens`` tokens after it (the first turn, its observation, …), each scored."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    first = sample.loss_mask.index(True) if any(sample.loss_mask) else len(sample.token_ids) - 1
    prompt_len = max(1, first)
    end = min(len(sample.token_ids), prompt_len + max_tokens)
    return torch.tensor([sample.token_ids[:end]], dtype=torch.long), prompt_len


def audit_layer_types(
    model: nn.Module, sample: TrainSample, max_tokens: int = AUDIT_TOKENS
) -> LayerTypeKL:
    """:func:`hybrid_numerics.mismatch_audit` of ``model`` (a patched Qwen3.5 causal LM, as the
    trainer holds it) on :func:`audit_window` of ``sample``; the model's weights and mode are
    left as they were."""
    ids, prompt_len = audit_window(sample, max_tokens)
    device = next(model.parameters()).device
    began = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        report = mismatch_audit(
            model, ids.to(device), prompt_len=prompt_len, compare_bf16_state=False
        )
    finally:
        model.train(was_training)
    return LayerTypeKL(
        overall=report.overall,
        linear_attention=float(report.by_layer_type["linear_attention"]),
        full_attention=float(report.by_layer_type["full_attention"]),
        tokens=int(ids.shape[1] - prompt_len),
        seconds=time.perf_counter() - began,
    )


def numerics_figures(
    omega: Mapping[str, float], audit: LayerTypeKL | None
) -> dict[str, Any]:  # UpdateMetrics field -> float (int for kl_audit_tokens)
    """The ``UpdateMetrics`` numerics fields of one update: ``omega_<key>`` for each of
    :attr:`StepStats.omega`'s keys and, when an audit ran, its ``kl_*`` figures (fields left
    out keep the record's -1, "not measured")."""
    figures: dict[str, Any] = {f"omega_{key}": value for key, value in omega.items()}
    if audit is not None:
        figures.update(
            kl_audit_overall=audit.overall,
            kl_linear_attention=audit.linear_attention,
            kl_full_attention=audit.full_attention,
            kl_audit_tokens=audit.tokens,
            kl_audit_seconds=audit.seconds,
        )
    return figures
