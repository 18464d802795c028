"""Fixed-weight mismatch audit: score the same tokens as an engine would and as a trainer would.

The *engine path* prefills a prompt into a cache and then feeds the given tokens one at a time
(teacher forcing: exactly what an engine that sampled these tokens computed). The *trainer path*
is one full forward over the whole sequence. Per scored token the mismatch is the k3 estimator
``ω - log ω - 1`` with ``ω = π_train(a_t) / π_engine(a_t)`` (Arctic-SWE §3.3; the cispo-loss metric),
evaluated in float64 with ``expm1`` so values near 1e-9 are not lost to cancellation.

Attribution by layer type runs one type through its decode computation at a time:
``linear_attention`` = a full forward whose GDN layers run the token-by-token recurrence
(attention stays full-forward); ``full_attention`` = the cached decode loop whose GDN layers
recompute the chunk path over the whole prefix (attention decodes from its KV cache).

Two comparisons tell the paper's story on any model: the decode path with a bf16-rounded
recurrent-state cache vs the FP32 one, and - given new weights - a cache computed under the old
weights and reused after the refresh ("stale") vs one re-prefilled under the new weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import nn

from hybrid_numerics._errors import PatchError
from hybrid_numerics._qwen3_5 import is_patched, patched_config
from hybrid_numerics._qwen3_5_compat import cache_keyword


@dataclass(frozen=True)
class MismatchReport:
    """What :func:`mismatch_audit` measured (all KL values are token means of ``ω - log ω - 1``).

    * ``overall``: engine path (FP32 state cache) vs trainer path, targets ``prompt_len .. T-1``.
    * ``by_layer_type``: ``{"linear_attention": …, "full_attention": …}`` (see module doc).
    * ``by_position``: per target position ``prompt_len + i``, mean over the batch.
    * ``per_token``: ``[B, T - prompt_len]`` float64, the overall values per token.
    * ``bf16_state``: like ``overall`` with the recurrent-state cache rounded to bf16 (or None).
    * ``stale_cache`` / ``recomputed_cache``: after a weight change at ``refresh_at``, decoding
      from the old-weight cache vs from a re-prefilled cache, each against the trainer path
      under the new weights, targets ``refresh_at + 1 .. T-1`` (None without ``new_state_dict``).
    """

    overall: float
    by_layer_type: Mapping[str, float]
    by_position: tuple[float, ...]
    per_token: torch.Tensor
    bf16_state: float | None
    stale_cache: float | None
    recomputed_cache: float | None
    prompt_len: int
    refresh_at: int | None

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary (no tensors)."""
        return {
            "overall": self.overall,
            "by_layer_type": dict(self.by_layer_type),
            "by_position": list(self.by_position),
            "bf16_state": self.bf16_state,
            "stale_cache": self.stale_cache,
            "recomputed_cache": self.recomputed_cache,
            "prompt_len": self.prompt_len,
            "refresh_at": self.refresh_at,
        }


def k3_mismatch(logp_train: torch.Tensor, logp_engine: torch.Tensor) -> torch.Tensor:
    """Per-token ``ω - log ω - 1`` with ``log ω = logp_train - logp_engine``, in float64."""
    log_w = logp_train.double() - logp_engine.double()
    return torch.expm1(log_w) - log_w


@torch.no_grad()
def mismatch_audit(
    model: nn.Module,
    token_ids: torch.Tensor,
    *,
    prompt_len: int = 1,
    compare_bf16_state: bool = True,
    new_state_dict: Mapping[str, torch.Tensor] | None = None,
    refresh_at: int | None = None,
) -> MismatchReport:
    """Score ``token_ids: [B, T]`` (same length, no padding) through both paths of a model
    patched with :func:`patch_qwen3_5` (a ``*ForCausalLM`` returning ``.logits``).

    ``new_state_dict`` (e.g. the weights after one optimizer step) enables the stale-cache
    comparison; the refresh happens after ``refresh_at`` tokens (default ``T // 2``). The model's
    weights are restored before returning.
    """
    T = _check_audit_inputs(model, token_ids, prompt_len)
    trainer = _trainer_logprobs(model, token_ids)[:, prompt_len - 1 :]
    engine = _engine_logprobs(model, token_ids, prompt_len)
    per_token = k3_mismatch(trainer, engine)
    with patched_config(model, mode="recurrent"):
        gdn_only = _trainer_logprobs(model, token_ids)[:, prompt_len - 1 :]
    with patched_config(model, mode="prefix_chunk"):
        attention_only = _engine_logprobs(model, token_ids, prompt_len)
    by_type = {
        "linear_attention": _mean(k3_mismatch(trainer, gdn_only)),
        "full_attention": _mean(k3_mismatch(trainer, attention_only)),
    }
    bf16 = None
    if compare_bf16_state:
        with patched_config(model, cache_state_dtype=torch.bfloat16):
            bf16 = _mean(k3_mismatch(trainer, _engine_logprobs(model, token_ids, prompt_len)))
    stale = recomputed = None
    if new_state_dict is not None:
        refresh_at = T // 2 if refresh_at is None else refresh_at
        stale, recomputed = _refresh_comparison(model, token_ids, new_state_dict, refresh_at)
    return MismatchReport(
        overall=_mean(per_token),
        by_layer_type=by_type,
        by_position=tuple(per_token.mean(dim=0).tolist()),
        per_token=per_token,
        bf16_state=bf16,
        stale_cache=stale,
        recomputed_cache=recomputed,
        prompt_len=prompt_len,
        refresh_at=refresh_at if new_state_dict is not None else None,
    )


def _check_audit_inputs(model: nn.Module, token_ids: torch.Tensor, prompt_len: int) -> int:
    if not is_patched(model):
        raise PatchError("mismatch_audit needs a model patched with patch_qwen3_5")
    if token_ids.dim() != 2 or token_ids.dtype not in (torch.int32, torch.int64):
        raise PatchError(
            f"token_ids must be an integer [B, T] tensor, got {token_ids.dtype} {tuple(token_ids.shape)}"
        )
    T = token_ids.shape[1]
    if not 1 <= prompt_len < T:
        raise PatchError(f"prompt_len must be in [1, T) = [1, {T}), got {prompt_len}")
    return T


def _mean(x: torch.Tensor) -> float:
    return float(x.mean())


def _token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits.double(), dim=-1)
    return logp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)


def _trainer_logprobs(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """``[B, T-1]`` log-probs of ``ids[:, 1:]`` from one full forward (no cache)."""
    logits = model(ids, use_cache=False).logits
    return _token_logprobs(logits[:, :-1], ids[:, 1:])


def _engine_logprobs(
    model: nn.Module,
    ids: torch.Tensor,
    prefill_len: int,
    *,
    after_prefill: Callable[[], None] | None = None,
) -> torch.Tensor:
    """``[B, T - prefill_len]`` log-probs of ``ids[:, prefill_len:]``: prefill, then one token
    per step from the cache. ``after_prefill`` runs between the two (a weight refresh)."""
    from transformers import DynamicCache  # the optional extra; only the audit needs it here

    cache = {cache_keyword(model): DynamicCache(config=getattr(model, "config", None))}
    out = model(ids[:, :prefill_len], use_cache=True, **cache)
    logits = [out.logits[:, -1:]]
    if after_prefill is not None:
        after_prefill()
        logits = []  # the token after the prefill was sampled under the old weights
    for t in range(prefill_len, ids.shape[1] - 1):
        out = model(ids[:, t : t + 1], use_cache=True, **cache)
        logits.append(out.logits)
    first = prefill_len + (1 if after_prefill is not None else 0)
    return _token_logprobs(torch.cat(logits, dim=1), ids[:, first:])


def _refresh_comparison(
    model: nn.Module,
    ids: torch.Tensor,
    new_state_dict: Mapping[str, torch.Tensor],
    refresh_at: int,
) -> tuple[float, float]:
    if not 1 <= refresh_at < ids.shape[1] - 1:
        raise PatchError(f"refresh_at must be in [1, T-1), got {refresh_at}")
    old = {name: t.detach().clone() for name, t in model.state_dict().items()}

    def load_new() -> None:
        model.load_state_dict(new_state_dict)

    try:
        stale = _engine_logprobs(model, ids, refresh_at, after_prefill=load_new)
        trainer = _trainer_logprobs(model, ids)[:, refresh_at:]  # new weights, targets > refresh_at
        recomputed = _engine_logprobs(model, ids, refresh_at + 1)
    finally:
        model.load_state_dict(old)
    return _mean(k3_mismatch(trainer, stale)), _mean(k3_mismatch(trainer, recomputed))
