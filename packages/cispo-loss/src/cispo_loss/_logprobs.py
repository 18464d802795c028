"""Token log-probs and entropies from hidden states x LM head, without ``TxV`` logits.

A custom autograd function walks the tokens in chunks of ``chunk_size`` and the vocabulary in
chunks of ``vocab_chunk_size``. Forward keeps an online (streaming) log-sum-exp per token, so only
one ``[chunk_size, vocab_chunk_size]`` logit tile exists at a time and only ``O(T)`` numbers are
saved for backward; backward recomputes each tile from the saved hidden states (Arctic-SWE §5:
131k-token trajectories, 250k vocabularies). Logits are produced by a matmul in the input dtype
(as the inference engine does) and then upcast, so every reduction — max, sum of exponentials,
entropy — accumulates in float32 (float64 for float64 inputs).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from cispo_loss._checks import require_float, require_integer, require_same_device, require_tensor
from cispo_loss._errors import InputError


class TokenLogprobs(NamedTuple):
    """Per-token outputs of :func:`token_logprobs`, both shaped like ``targets``."""

    logprobs: torch.Tensor
    entropy: torch.Tensor


def _tile_logits(
    hidden: torch.Tensor, weight: torch.Tensor, temperature: float, dtype: torch.dtype
) -> torch.Tensor:
    """``[C, Vc]`` logits of one tile in the accumulation dtype, divided by the temperature."""
    logits = (hidden @ weight.T).to(dtype)
    if temperature != 1.0:
        logits.div_(temperature)
    return logits


def _chunk_forward(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    temperature: float,
    vocab_chunk: int,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Streaming log-sum-exp over vocabulary tiles for one token chunk → (logprob, entropy, lse).

    Running state per token: ``top`` (max logit so far), ``norm = Σ e^{x-top}`` and
    ``spread = Σ e^{x-top}·(x-top)``; then ``lse = top + log norm`` and the entropy is
    ``log norm - spread/norm`` (kept relative to ``top`` so peaked rows do not cancel badly).
    """
    vocab = weight.shape[0]
    top = norm = spread = torch.empty(0)
    target_logit = torch.zeros(hidden.shape[0], dtype=dtype, device=hidden.device)
    for start in range(0, vocab, vocab_chunk):
        x = _tile_logits(hidden, weight[start : start + vocab_chunk], temperature, dtype)
        local = targets - start
        hit = (local >= 0) & (local < x.shape[1])
        picked = x.gather(1, local.clamp(0, x.shape[1] - 1).unsqueeze(1)).squeeze(1)
        target_logit = torch.where(hit, picked, target_logit)
        tile_top = x.amax(dim=1)
        if start == 0:
            new_top = tile_top
        else:
            new_top = torch.maximum(top, tile_top)
            scale = (top - new_top).exp()
            spread = scale * (spread + (top - new_top) * norm)
            norm = scale * norm
        x.sub_(new_top.unsqueeze(1))  # x now holds x - top
        weights = x.exp()
        tile_norm = weights.sum(dim=1)
        # row-wise dot product: one read of both tiles, no third tile
        tile_spread = torch.bmm(weights.unsqueeze(1), x.unsqueeze(2)).reshape(-1)
        norm = tile_norm if start == 0 else norm + tile_norm
        spread = tile_spread if start == 0 else spread + tile_spread
        top = new_top
    log_norm = norm.log()
    lse = top + log_norm
    return target_logit - lse, log_norm - spread / norm, lse


def _tile_grad(
    x: torch.Tensor,
    lse: torch.Tensor,
    entropy: torch.Tensor,
    grad_lp: torch.Tensor | None,
    grad_ent: torch.Tensor | None,
    temperature: float,
) -> torch.Tensor:
    """d loss / d (raw logits) for one tile, computed in place on ``x``.

    With ``p = softmax(x)``: ``d lp/dx = onehot - p`` and ``dH/dx = -p * (log p + H)``, so
    ``dx = -p * (g_lp + g_ent*H + g_ent*log p)`` (+ ``g_lp`` at the target, added by the caller).
    The per-row scalars absorb the sign and the ``1/temperature`` of the raw-logit chain rule,
    which leaves four passes over the tile: subtract, exp, multiply-add, multiply.
    """
    log_p = x.sub_(lse.unsqueeze(1))
    p = log_p.exp()
    inv_t = 1.0 / temperature
    if grad_ent is None:
        assert grad_lp is not None
        return p.mul_((-inv_t * grad_lp).unsqueeze(1))
    offset = grad_ent * entropy
    if grad_lp is not None:
        offset = offset + grad_lp
    coeff = torch.addcmul(
        (-inv_t * offset).unsqueeze(1), log_p, (-inv_t * grad_ent).unsqueeze(1), out=log_p
    )
    return coeff.mul_(p)


def _accumulate_mm(acc: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """``acc += a @ b``; fused (no temporary) when the dtypes agree, else product then upcast add."""
    if a.dtype == acc.dtype:
        acc.addmm_(a, b)
    else:
        acc += (a @ b).to(acc.dtype)


class _ChunkedTokenLogprobs(torch.autograd.Function):
    """Autograd function behind :func:`token_logprobs` on flat ``[N, H]`` hidden states."""

    @staticmethod
    def forward(
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        targets: torch.Tensor,
        temperature: float,
        chunk_size: int,
        vocab_chunk_size: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        dtype = torch.promote_types(hidden.dtype, torch.float32)
        total = hidden.shape[0]
        logprobs = torch.empty(total, dtype=dtype, device=hidden.device)
        entropy = torch.empty_like(logprobs)
        lse = torch.empty_like(logprobs)
        for start in range(0, total, chunk_size):
            rows = slice(start, start + chunk_size)
            logprobs[rows], entropy[rows], lse[rows] = _chunk_forward(
                hidden[rows], weight, targets[rows], temperature, vocab_chunk_size, dtype
            )
        ctx.save_for_backward(hidden, weight, targets, lse, entropy)
        ctx.config = (temperature, chunk_size, vocab_chunk_size)
        ctx.set_materialize_grads(False)
        return logprobs, entropy

    @staticmethod
    def backward(
        ctx: Any, grad_lp: torch.Tensor | None, grad_ent: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, ...]:
        hidden, weight, targets, lse, entropy = ctx.saved_tensors
        temperature, chunk_size, vocab_chunk = ctx.config
        want_hidden, want_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if (grad_lp is None and grad_ent is None) or not (want_hidden or want_weight):
            return None, None, None, None, None, None
        dtype = lse.dtype
        grad_hidden = torch.empty_like(hidden) if want_hidden else None
        # Summed over every token chunk, so it accumulates in float32 even for bf16 weights.
        grad_weight = (
            torch.zeros(weight.shape, dtype=dtype, device=weight.device) if want_weight else None
        )
        vocab = weight.shape[0]
        for start in range(0, hidden.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            h, tgt = hidden[rows], targets[rows]
            g_lp = None if grad_lp is None else grad_lp[rows].to(dtype)
            g_ent = None if grad_ent is None else grad_ent[rows].to(dtype)
            acc_h = torch.zeros(h.shape, dtype=dtype, device=h.device) if want_hidden else None
            for v0 in range(0, vocab, vocab_chunk):
                w = weight[v0 : v0 + vocab_chunk]
                x = _tile_logits(h, w, temperature, dtype)
                grad_z = _tile_grad(x, lse[rows], entropy[rows], g_lp, g_ent, temperature)
                if g_lp is not None:
                    local = tgt - v0
                    hit = ((local >= 0) & (local < w.shape[0])).nonzero().squeeze(1)
                    grad_z[hit, local[hit]] += g_lp[hit] / temperature
                grad_z = grad_z.to(weight.dtype)
                if acc_h is not None:
                    _accumulate_mm(acc_h, grad_z, w)
                if grad_weight is not None:
                    _accumulate_mm(grad_weight[v0 : v0 + vocab_chunk], grad_z.T, h)
            if grad_hidden is not None and acc_h is not None:
                grad_hidden[rows] = acc_h
        grad_w = None if grad_weight is None else grad_weight.to(weight.dtype)
        return grad_hidden, grad_w, None, None, None, None


def _check_inputs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    temperature: float,
    chunk_size: int,
    vocab_chunk_size: int,
) -> None:
    require_tensor("hidden", hidden)
    require_tensor("lm_head_weight", weight)
    require_tensor("targets", targets)
    require_float("hidden", hidden)
    require_float("lm_head_weight", weight)
    require_integer("targets", targets)
    require_same_device("lm_head_weight", weight, hidden.device, "hidden")
    require_same_device("targets", targets, hidden.device, "hidden")
    if weight.dim() != 2 or weight.shape[0] == 0:
        raise InputError(
            "lm_head_weight", f"expected shape [V, H] with V >= 1, got {tuple(weight.shape)}"
        )
    if hidden.dim() < 2 or hidden.shape[-1] != weight.shape[1]:
        raise InputError(
            "hidden",
            f"expected shape [..., H={weight.shape[1]}] (H of lm_head_weight), got {tuple(hidden.shape)}",
        )
    if hidden.dtype != weight.dtype:
        raise InputError(
            "lm_head_weight", f"dtype {weight.dtype} differs from hidden's {hidden.dtype}"
        )
    if tuple(targets.shape) != tuple(hidden.shape[:-1]):
        raise InputError(
            "targets",
            f"shape {tuple(targets.shape)} does not match hidden's leading shape {tuple(hidden.shape[:-1])}",
        )
    if targets.numel() == 0:
        raise InputError("targets", "empty batch: no tokens")
    if int(targets.min()) < 0 or int(targets.max()) >= weight.shape[0]:
        raise InputError(
            "targets",
            f"token ids must lie in [0, {weight.shape[0]}), got [{int(targets.min())}, {int(targets.max())}]",
        )
    if not (temperature > 0 and temperature != float("inf")):
        raise InputError("temperature", f"must be a finite number > 0, got {temperature!r}")
    for name, size in (("chunk_size", chunk_size), ("vocab_chunk_size", vocab_chunk_size)):
        if size <= 0:
            raise InputError(name, f"must be > 0, got {size}")


def token_logprobs(
    hidden: torch.Tensor,
    lm_head_weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    temperature: float = 1.0,
    chunk_size: int = 1024,
    vocab_chunk_size: int = 16384,
) -> TokenLogprobs:
    """Log-prob of each target token and the entropy of each next-token distribution.

    ``logprobs[..., t] = log softmax(hidden[..., t, :] @ lm_head_weight.T / temperature)[targets[..., t]]``
    and ``entropy[..., t]`` is the entropy of that softmax, computed tile by tile so that no
    ``[T, V]`` logits exist in forward or backward (peak extra memory about
    ``3 · chunk_size · vocab_chunk_size`` accumulation-dtype numbers, plus a float32 gradient
    buffer for a bf16/fp16 ``lm_head_weight``).

    Args:
        hidden: ``[..., H]`` final hidden states (after the final norm), e.g. ``[T, H]`` for a
            packed batch or ``[B, T, H]``; position ``t`` predicts ``targets[..., t]`` — shift
            by one yourself (``hidden[:, :-1]``, ``input_ids[:, 1:]``).
        lm_head_weight: ``[V, H]`` output-projection weight (tied or not), same dtype and device.
        targets: ``[...]`` integer token ids in ``[0, V)`` (use the pad id at padding; mask it
            later in the loss).
        temperature: the sampling temperature the rollout log-probs were recorded under.
        chunk_size: tokens per tile.
        vocab_chunk_size: vocabulary rows per tile.

    Returns:
        :class:`TokenLogprobs` ``(logprobs, entropy)``, each shaped like ``targets``, float32
        (float64 for float64 inputs), differentiable with respect to ``hidden`` and
        ``lm_head_weight``.

    Raises:
        InputError: (a ``ValueError``) naming the argument on a shape/dtype/device mismatch, an
            empty batch, out-of-range token ids or a non-positive temperature or chunk size.
    """
    _check_inputs(hidden, lm_head_weight, targets, temperature, chunk_size, vocab_chunk_size)
    flat_hidden = hidden.reshape(-1, hidden.shape[-1])
    flat_targets = targets.reshape(-1).to(torch.int64)
    logprobs, entropy = _ChunkedTokenLogprobs.apply(
        flat_hidden,
        lm_head_weight,
        flat_targets,
        float(temperature),
        int(chunk_size),
        int(vocab_chunk_size),
    )
    return TokenLogprobs(logprobs.reshape(targets.shape), entropy.reshape(targets.shape))
